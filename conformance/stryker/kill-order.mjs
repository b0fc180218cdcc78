/**
 * Which checks to run first in a mutant's run (the suite's `--first`). A mutant run ends at its first failure
 * (`--bail`, `--strict-profile`), and most mutants fall to a few checks, so a run that takes first the checks that
 * killed most mutants so far reaches its answer sooner. Mutants of one module mostly fall to the same checks (a
 * PagerDuty module's to the PagerDuty checks, not to the Slack ones its section shares), so the checks that killed
 * the mutated module's mutants come first, then the rest of its section's killers. The order decides how soon a
 * kill comes, never whether: core checks still all run before profile ones, and a mutant that survives runs every
 * check whatever their order. What it may change is which kill a mutant that fails profile checks only is counted
 * as: the sweep (some of it core) judges the traffic of the checks that ran, and after the first profile failure
 * fewer of them have. Each worker learns from its own runs.
 */
export class KillOrder {
  constructor() {
    /** section -> check id -> mutants it failed on */
    this.bySection = new Map()
    /** module -> check id -> mutants it failed on */
    this.byModule = new Map()
  }

  /**
   * Counts the checks a killing run's report failed (the sweep, which always runs last, aside) for the mutant's
   * section and its module.
   */
  add(section, report, module) {
    if (section === undefined) return
    const failed = (report?.results ?? [])
      .filter((r) => r.outcome === 'fail' && !String(r.id).startsWith('sweep.'))
      .map((r) => String(r.id))
    count(this.bySection, section, failed)
    if (module !== undefined) count(this.byModule, module, failed)
  }

  /**
   * The killing checks for a mutant of `module` in `section`: the module's own, most kills first, then the
   * section's others, most kills first (ties in the order they first killed).
   */
  first(section, module) {
    const own = mostFirst(this.byModule.get(module))
    const taken = new Set(own)
    return [...own, ...mostFirst(this.bySection.get(section)).filter((id) => !taken.has(id))]
  }
}

function count(counts, key, ids) {
  let of = counts.get(key)
  if (!of) {
    of = new Map()
    counts.set(key, of)
  }
  for (const id of ids) of.set(id, (of.get(id) ?? 0) + 1)
}

function mostFirst(counts) {
  return counts ? [...counts].sort((a, b) => b[1] - a[1]).map(([id]) => id) : []
}
