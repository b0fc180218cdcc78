/**
 * `conformance:stryker --also-postgres`: the mutants a SQLite pass left alive are exactly the ones the second pass
 * mutates, and a kill there replaces their verdict in the reports, nothing else.
 */
import { Instrumenter } from '@stryker-mutator/instrumenter'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: plain ESM modules of the command, without types
import { quiet } from '../stryker/changes.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import * as stores from '../stryker/stores.mjs'
import type { Location, Position, Report } from './stryker-report.js'

const { aliveKeys, aliveRanges, mergeSecondPass, mutantKey, UNCOVERED, withReport } = stores

const FILE = 'src/sample.ts'
const SOURCE = [
  'export function f(a: number, b: string) {',
  "  if (a > 2 && b === 'x') return 'big'",
  "  return b.length > 0 ? 'some' : 'none'",
  '}',
  '',
].join('\n')

/** The sample's mutants as Stryker's instrumenter makes them within `mutate` (positions from 0, lines too). */
async function instrument(mutate: Location[] | true) {
  const result = await new Instrumenter(quiet).instrument([{ name: FILE, content: SOURCE, mutate }], {
    plugins: null,
    excludedMutations: [],
    ignorers: [],
    noHeader: true,
  })
  return result.mutants
}

/** A report of the sample (lines and columns from 1, as the report schema counts them), each mutant's status given. */
function reportOf(mutants: Awaited<ReturnType<typeof instrument>>, status: (i: number) => string): Report {
  return {
    schemaVersion: '1.0',
    files: {
      [FILE]: {
        language: 'typescript',
        source: SOURCE,
        mutants: mutants.map((m, i) => ({
          id: String(i),
          mutatorName: m.mutatorName,
          replacement: m.replacement,
          status: status(i),
          location: {
            start: { line: m.location.start.line + 1, column: m.location.start.column + 1 },
            end: { line: m.location.end.line + 1, column: m.location.end.column + 1 },
          },
        })),
      },
    },
  }
}

/** Stryker's `file:line:column-line:column` mutate range as it reads one (lines from 1, columns from 0). */
function parseRange(range: string): { file: string; location: Location } {
  const match = /^(.*):(\d+):(\d+)-(\d+):(\d+)$/.exec(range)
  if (!match) throw new Error(`not a range: ${range}`)
  const [, file = '', l1, c1, l2, c2] = match
  return {
    file,
    location: {
      start: { line: Number(l1) - 1, column: Number(c1) },
      end: { line: Number(l2) - 1, column: Number(c2) },
    },
  }
}

describe('conformance:stryker --also-postgres', () => {
  it('each range of a mutant left alive makes the instrumenter mutate that mutant, and only what its node holds', async () => {
    const all = await instrument(true)
    expect(all.length).toBeGreaterThan(8)
    // A leaf (a string literal) and a node holding others (the comparison).
    const chosen = [
      all.findIndex((m) => m.mutatorName === 'StringLiteral'),
      all.findIndex((m) => m.mutatorName === 'EqualityOperator'),
    ]
    expect(chosen).not.toContain(-1)
    for (const index of chosen) {
      const target = all[index]
      if (!target) throw new Error('no such mutant')
      const ranges: string[] = aliveRanges(reportOf(all, (i) => (i === index ? 'Survived' : 'Killed')))
      expect(ranges).toHaveLength(1)
      const { file, location } = parseRange(ranges[0] ?? '')
      expect(file).toBe(FILE)
      const again = await instrument([location])
      const key = (m: (typeof all)[number]) =>
        `${JSON.stringify(m.location)}|${m.mutatorName}|${m.replacement}`
      expect(again.map(key)).toContain(key(target))
      // Nothing outside the alive mutant's node is mutated again.
      for (const m of again) {
        const { start, end } = m.location
        const within = (p: Position, q: Position) =>
          p.line < q.line || (p.line === q.line && p.column <= q.column)
        expect(within(target.location.start, start) && within(end, target.location.end)).toBe(true)
      }
    }
  })

  it('the second pass runs exactly the mutants left alive: their keys are those its runner is handed', async () => {
    const all = await instrument(true)
    const alive = (i: number) => i % 3 === 0
    const keys: string[] = aliveKeys(reportOf(all, (i) => (alive(i) ? 'NoCoverage' : 'Killed')))
    // The instrumenter's mutants are what a test runner gets as `activeMutant` (positions from 0).
    const expected = all.filter((_, i) => alive(i)).map((m) => mutantKey(FILE, m))
    expect(keys).toEqual(expected)
    expect(new Set(all.map((m) => mutantKey(FILE, m))).size).toBe(all.length)
  })

  it('takes survivors and uncovered mutants, once per place, and nothing the first pass killed or ignored', async () => {
    const all = await instrument(true)
    const statuses = ['Survived', 'NoCoverage', 'Killed', 'Timeout', 'Ignored']
    const report = reportOf(all, (i) => statuses[i % statuses.length] ?? 'Killed')
    const alive = report.files[FILE]?.mutants.filter(
      (m) => m.status === 'Survived' || m.status === 'NoCoverage',
    )
    const places = new Set(alive?.map((m) => JSON.stringify(m.location)))
    expect(aliveRanges(report)).toHaveLength(places.size)
    expect(aliveRanges(reportOf(all, () => 'Killed'))).toEqual([])
  })

  it('--uncovered-only: takes the mutants whose code the first pass never ran, not its survivors', async () => {
    const all = await instrument(true)
    const statuses = ['Survived', 'NoCoverage', 'Killed', 'Timeout', 'Ignored']
    const report = reportOf(all, (i) => statuses[i % statuses.length] ?? 'Killed')
    const uncovered = all.filter((_, i) => i % statuses.length === 1)
    expect(uncovered.length).toBeGreaterThan(0)
    expect(aliveKeys(report, UNCOVERED)).toEqual(uncovered.map((m) => mutantKey(FILE, m)))
    const places = new Set(uncovered.map((m) => JSON.stringify(m.location)))
    expect(aliveRanges(report, UNCOVERED)).toHaveLength(places.size)
    // Survivors alone: nothing to judge again.
    expect(
      aliveRanges(
        reportOf(all, () => 'Survived'),
        UNCOVERED,
      ),
    ).toEqual([])
    expect(
      aliveKeys(
        reportOf(all, () => 'Survived'),
        UNCOVERED,
      ),
    ).toEqual([])
  })

  it('a mutant left alive that the second pass detected takes its verdict; every other keeps the first', async () => {
    const all = await instrument(true)
    const first = reportOf(all, (i) => (i < 3 ? 'Survived' : i === 3 ? 'NoCoverage' : 'Killed'))
    const second = reportOf(all, (i) =>
      i === 0 ? 'Killed' : i === 1 ? 'Survived' : i === 3 ? 'Timeout' : i === 4 ? 'Survived' : 'Killed',
    )
    // Mutant 2 is not in the second pass (its range was not asked for).
    second.files[FILE]?.mutants.splice(2, 1)
    for (const m of second.files[FILE]?.mutants ?? []) {
      m.id = `pg-${m.id}`
      m.statusReason = `core check-${m.id}`
    }
    const { report, changed } = mergeSecondPass(first, second, 'on PostgreSQL') as {
      report: Report
      changed: number
    }
    const merged = report.files[FILE]?.mutants ?? []
    expect(changed).toBe(2)
    expect(merged[0]).toMatchObject({
      status: 'Killed',
      statusReason: 'on PostgreSQL: core check-pg-0',
      secondId: 'pg-0',
    })
    expect(merged[1]).toMatchObject({ status: 'Survived' })
    expect(merged[1]?.secondId).toBeUndefined()
    // Alive in the first and not judged in the second (its twin absent): still alive.
    expect(merged[2]).toMatchObject({ status: 'Survived' })
    expect(merged[3]).toMatchObject({ status: 'Timeout', secondId: 'pg-3' })
    // Killed in the first and alive in the second: killed.
    expect(merged[4]).toMatchObject({ status: 'Killed' })
    expect(merged[4]?.secondId).toBeUndefined()
    // Twins are told by place, mutator and replacement, not by id.
    const m0 = first.files[FILE]?.mutants[0]
    const s0 = second.files[FILE]?.mutants[0]
    expect(m0 && s0 && mutantKey(FILE, m0) === mutantKey(FILE, s0)).toBe(true)
    // The first report itself is left as it was.
    expect(first.files[FILE]?.mutants[0]?.status).toBe('Survived')
  })

  it('the HTML page shows the merged report, and a page without Stryker’s report is refused', () => {
    const page =
      '<html><script>\n      const app = x;\n      app.report = {"old":1};\n      function updateTheme() {}'
    const report = { files: { [FILE]: { source: '</script><b>', mutants: [] } }, schemaVersion: '1.0' }
    const html = withReport(page, report)
    expect(html).toContain(
      'app.report = {"files":{"src/sample.ts":{"source":"<"+"/script><"+"b>","mutants":[]}}',
    )
    expect(html).not.toContain('"old"')
    expect(html.endsWith(';\n      function updateTheme() {}')).toBe(true)
    expect(() => withReport('<html></html>', report)).toThrow(/does not hold its report/)
  })
})
