/**
 * The reference has two stores, and some of its code runs on one of them only (a PostgreSQL unit whose claim goes
 * with its writes, counts held to a COMMIT that can refuse them, ...). A run on SQLite leaves such code's mutants
 * alive or uncovered though the suite kills them once the reference runs on PostgreSQL. `run.mjs --also-postgres`
 * judges the mutants the SQLite pass left alive a second time, the reference on PostgreSQL, and a mutant the suite
 * killed on either store counts as killed: the suite did tell that deployment of the mutated reference from a
 * correct one. These are the pure parts of it, over Stryker's JSON reports (mutation-testing-report-schema).
 */

/** Statuses of a mutant the pass left alive: what a second pass judges again. */
export const ALIVE = new Set(['Survived', 'NoCoverage'])
/** Of those, the mutants whose code the pass never ran (`--uncovered-only`): what only the other store may run. */
export const UNCOVERED = new Set(['NoCoverage'])
/** Statuses of a mutant the suite detected (Stryker counts a timeout as detected). */
export const DETECTED = new Set(['Killed', 'Timeout'])

/**
 * One mutant, the same in any pass over the same sources: file, place, mutator and replacement. Its place is compared
 * as given: two keys match only when their positions count alike (a report's, or Stryker's own as a test runner gets
 * `activeMutant`).
 */
export function mutantKey(file, mutant) {
  const { start, end } = mutant.location
  return `${file}|${start.line}:${start.column}-${end.line}:${end.column}|${mutant.mutatorName}|${mutant.replacement}`
}

/**
 * The mutants `report` left alive (with a status in `statuses`), each with its place in Stryker's own positions (lines
 * and columns from 0), where a report counts both from 1.
 */
function* alive(report, statuses) {
  for (const [file, { mutants }] of Object.entries(report.files))
    for (const m of mutants) {
      if (!statuses.has(m.status)) continue
      const { start, end } = m.location
      const location = {
        start: { line: start.line - 1, column: start.column - 1 },
        end: { line: end.line - 1, column: end.column - 1 },
      }
      yield { file, mutant: { ...m, location } }
    }
}

/**
 * The mutate patterns that select exactly the mutants of `report` that `keep(file, mutant)` takes: Stryker's
 * `file:line:column-line:column` ranges, whose lines count from 1 and columns from 0 (a report counts both from 1). A
 * range also takes the mutants nested inside the kept one's node.
 */
export function rangesWhere(report, keep) {
  const ranges = new Set()
  for (const [file, { mutants }] of Object.entries(report.files))
    for (const m of mutants) {
      if (!keep(file, m)) continue
      const { start, end } = m.location
      ranges.add(`${file}:${start.line}:${start.column - 1}-${end.line}:${end.column - 1}`)
    }
  return [...ranges]
}

/**
 * The mutate patterns that select exactly the mutants `report` left alive (rangesWhere; `statuses`: which of them,
 * ALIVE or UNCOVERED): the mutants nested inside an alive one's node, judged already, are skipped by the second
 * pass's runner (aliveKeys).
 */
export function aliveRanges(report, statuses = ALIVE) {
  return rangesWhere(report, (_file, m) => statuses.has(m.status))
}

/**
 * The keys (mutantKey in Stryker's own positions, as a test runner gets `activeMutant`) of the mutants `report` left
 * alive (with a status in `statuses`): a second pass runs these and no other.
 */
export function aliveKeys(report, statuses = ALIVE) {
  return Array.from(alive(report, statuses), ({ file, mutant }) => mutantKey(file, mutant))
}

/**
 * The first pass's report with each mutant it left alive that the second pass detected taken from the second
 * (status, reason prefixed with `label`, and `secondId`, its id in the second pass, whose suite report tells the
 * kind of kill); every other mutant as the first pass judged it. Returns the merged report and how many changed.
 */
export function mergeSecondPass(first, second, label) {
  const detected = new Map()
  for (const [file, { mutants }] of Object.entries(second.files))
    for (const m of mutants) if (DETECTED.has(m.status)) detected.set(mutantKey(file, m), m)
  let changed = 0
  const files = {}
  for (const [file, entry] of Object.entries(first.files)) {
    files[file] = {
      ...entry,
      mutants: entry.mutants.map((m) => {
        const twin = ALIVE.has(m.status) ? detected.get(mutantKey(file, m)) : undefined
        if (!twin) return m
        changed++
        return {
          ...m,
          status: twin.status,
          statusReason: `${label}: ${twin.statusReason ?? twin.status}`,
          killedBy: twin.killedBy,
          coveredBy: twin.coveredBy,
          testsCompleted: twin.testsCompleted,
          secondId: twin.id,
        }
      }),
    }
  }
  return { report: { ...first, files }, changed }
}

/**
 * Stryker's HTML report (its html reporter's page) with the report it shows replaced by `report`: the page holds
 * the report as one JSON literal (`app.report = …;`), the `<` of its strings broken as `<"+"`.
 */
export function withReport(html, report) {
  const start = html.indexOf('app.report = ')
  const end = start < 0 ? -1 : html.indexOf(';\n', start)
  if (start < 0 || end < 0) throw new Error('the HTML report does not hold its report where Stryker puts it')
  const json = JSON.stringify(report).replace(/</g, '<"+"')
  return `${html.slice(0, start)}app.report = ${json}${html.slice(end)}`
}
