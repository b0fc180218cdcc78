import { appendFileSync, closeSync, fstatSync, openSync, readSync } from 'node:fs'

/**
 * Which checks to run first in a mutant's run (the suite's `--first`). A mutant run ends at its first failure
 * (`--bail`, `--strict-profile`), and most mutants fall to a few checks, so a run that takes first the checks that
 * killed most mutants so far reaches its answer sooner. Mutants of one module mostly fall to the same checks (a
 * PagerDuty module's to the PagerDuty checks, not to the Slack ones its section shares), so the checks that killed
 * the mutated module's mutants come first, then the rest of its section's killers. The order decides how soon a
 * kill comes, never whether: core checks still all run before profile ones, and a mutant that survives runs every
 * check whatever their order. What it may change is which kill a mutant that fails profile checks only is counted
 * as: the sweep (some of it core) judges the traffic of the checks that ran, and after the first profile failure
 * fewer of them have.
 *
 * Given a file, every worker learns from every worker's kills: each kill is appended to it as a line of JSON, and
 * each order reads the lines added since the last (a worker then knows a module's killers from the first mutants
 * of it any worker ran, not only from its own sixth of them). Without one, it learns from its own kills alone.
 */
export class KillOrder {
  constructor(file) {
    /** section -> check id -> mutants it failed on */
    this.bySection = new Map()
    /** module -> check id -> mutants it failed on */
    this.byModule = new Map()
    this.file = file
    /** Bytes of the file counted so far (whole lines only). */
    this.counted = 0
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
    if (failed.length === 0) return
    // One write of one line: appends of several processes do not interleave within it.
    if (this.file) appendFileSync(this.file, `${JSON.stringify({ section, module, failed })}\n`)
    else this.count(section, module, failed)
  }

  /**
   * The killing checks for a mutant of `module` in `section`: the module's own, most kills first, then the
   * section's others, most kills first (ties in the order they first killed).
   */
  first(section, module) {
    this.readKills()
    const own = mostFirst(this.byModule.get(module))
    const taken = new Set(own)
    return [...own, ...mostFirst(this.bySection.get(section)).filter((id) => !taken.has(id))]
  }

  count(section, module, failed) {
    tally(this.bySection, section, failed)
    if (module !== undefined) tally(this.byModule, module, failed)
  }

  /** Counts the whole lines the file gained since the last read (a line still being written waits for the next). */
  readKills() {
    if (!this.file) return
    let added
    try {
      const fd = openSync(this.file, 'r')
      try {
        const size = fstatSync(fd).size
        if (size <= this.counted) return
        added = Buffer.alloc(size - this.counted)
        readSync(fd, added, 0, added.length, this.counted)
      } finally {
        closeSync(fd)
      }
    } catch {
      return // no kill written yet
    }
    const end = added.lastIndexOf(0x0a)
    if (end < 0) return
    this.counted += end + 1
    for (const line of added.subarray(0, end).toString('utf8').split('\n')) {
      try {
        const { section, module, failed } = JSON.parse(line)
        if (typeof section === 'string' && Array.isArray(failed))
          this.count(section, module, failed.map(String))
      } catch {
        // not a line of ours: skipped
      }
    }
  }
}

function tally(counts, key, ids) {
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
