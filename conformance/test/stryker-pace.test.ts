/**
 * The mutation run's projected end (conformance/stryker/pace.mjs): judged by the previous run's cost lines over the
 * same scope, not by Stryker's average-pace estimate.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: plain ESM modules of the command, without types
import { newestCostLine, paceLine, project, readCosts } from '../stryker/pace.mjs'
import { scratchDir } from './scratch.js'

interface Line {
  mutant: string
  wallMs: number
}
const runs = (n: number, wallMs: number, from = 0): Line[] =>
  Array.from({ length: n }, (_, i) => ({ mutant: String(from + i), wallMs }))

describe('conformance:stryker pace', () => {
  it('projects from the share of the previous run’s work as many runs had done', () => {
    // The previous run: each worker's first 5 runs were slow (3 s), its last 15 quick (1 s): 30 s per worker.
    const previous = [
      [...runs(5, 3000), ...runs(15, 1000, 5)],
      [...runs(5, 3000, 20), ...runs(15, 1000, 25)],
    ]
    // This run is twice as slow: its first 5 runs per worker took 6 s each. Stryker's average pace would read
    // 30 runs left at 6 s, 180 s; the previous run says the 15 quick ones take 30 s.
    const current = [runs(5, 6000), runs(5, 6000, 5)]
    const p = project(current, previous)
    expect(p.runs).toBe(10)
    expect(p.done).toBeCloseTo(0.5)
    expect(p.wallSeconds).toBe(30)
    expect(p.projectedWallSeconds).toBe(60)
    const started = Date.UTC(2026, 11, 1, 0, 0)
    const now = started + 40_000
    // 10 s of set-up spent, 30 s of runs still to come: the end at 00:01:10, about 1 min in all.
    expect(paceLine(p, started, now, 3300)).toBe(
      "conformance:stryker: 10 runs in 0:40, 50 % of the previous run's work over this scope (55:00 in all): projected end 00:01 UTC, 1:10 in all",
    )
  })

  it('has no projection without a previous run, or past its number of runs', () => {
    expect(project([runs(3, 1000)], [])).toBeUndefined()
    expect(project([runs(4, 1000)], [runs(4, 1000)])).toBeUndefined()
    expect(paceLine(undefined, 0, 0, 0)).toBeUndefined()
  })

  it('reads each worker’s cost lines without the dry run, and when the last was written', () => {
    const dir = scratchDir('stryker-pace-')
    expect(readCosts(join(dir, 'none'))).toEqual([])
    expect(newestCostLine(dir)).toBe(0)
    const lines = [{ mutant: 'dry run', wallMs: 9000 }, ...runs(2, 500)]
    writeFileSync(join(dir, 'costs-1.jsonl'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`)
    writeFileSync(join(dir, 'costs-2.jsonl'), `${JSON.stringify({ mutant: 'dry run', wallMs: 1 })}\n`)
    writeFileSync(join(dir, 'other.json'), '{}')
    expect(readCosts(dir)).toEqual([runs(2, 500)])
    expect(newestCostLine(dir)).toBeGreaterThan(0)
  })
})
