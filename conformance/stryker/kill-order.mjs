/**
 * Which checks to run first in a section's next mutant run (the suite's `--first`). A mutant run ends at its first
 * failure (`--bail`, `--strict-profile`), and most mutants of a section fall to a few of its checks, so a run that
 * takes the checks that killed most of the section's mutants so far first reaches its answer sooner. The order
 * decides how soon a kill comes, never whether: core checks still all run before profile ones, and a mutant that
 * survives runs every check whatever their order. What it may change is which kill a mutant that fails profile
 * checks only is counted as: the sweep (some of it core) judges the traffic of the checks that ran, and after the
 * first profile failure fewer of them have. Each worker learns from its own runs.
 */
export class KillOrder {
  constructor() {
    /** section -> check id -> mutants it failed on */
    this.counts = new Map()
  }

  /** Counts the checks a killing run's report failed (the sweep, which always runs last, aside). */
  add(section, report) {
    if (section === undefined) return
    let counts = this.counts.get(section)
    if (!counts) {
      counts = new Map()
      this.counts.set(section, counts)
    }
    for (const r of report?.results ?? [])
      if (r.outcome === 'fail' && !String(r.id).startsWith('sweep.'))
        counts.set(r.id, (counts.get(r.id) ?? 0) + 1)
  }

  /** The section's killing checks, most kills first (ties in the order they first killed). */
  first(section) {
    const counts = this.counts.get(section)
    if (!counts) return []
    return [...counts].sort((a, b) => b[1] - a[1]).map(([id]) => id)
  }
}
