/**
 * The mutation run's projected end (conformance/stryker/pace.mjs): judged by the previous run's cost lines over the
 * same scope, not by Stryker's average-pace estimate.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: plain ESM modules of the command, without types
import { guideFile, paceLine, project, readCosts, readGuide, writeGuide } from '../stryker/pace.mjs'
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

  it('reads each worker’s cost lines without the dry run', () => {
    const dir = scratchDir('stryker-pace-')
    expect(readCosts(join(dir, 'none'))).toEqual([])
    const lines = [{ mutant: 'dry run', wallMs: 9000 }, ...runs(2, 500)]
    writeFileSync(join(dir, 'costs-1.jsonl'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`)
    writeFileSync(join(dir, 'costs-2.jsonl'), `${JSON.stringify({ mutant: 'dry run', wallMs: 1 })}\n`)
    writeFileSync(join(dir, 'other.json'), '{}')
    expect(readCosts(dir)).toEqual([runs(2, 500)])
  })

  it('keeps a finished run’s pace per scope and number of workers, for the next run to project from', () => {
    const out = scratchDir('stryker-guide-')
    const file = guideFile(out, ['src/a.ts'], 4)
    expect(guideFile(out, ['src/a.ts'], 2)).not.toBe(file)
    expect(guideFile(out, ['src/b.ts'], 4)).not.toBe(file)
    expect(readGuide(file)).toBeUndefined()
    const previous = [runs(3, 1000), runs(2, 2000, 3)]
    writeGuide(file, 3300.4, previous)
    const guide = readGuide(file)
    expect(guide.seconds).toBe(3300)
    // What a projection reads: each worker's run times, in order.
    expect(guide.costs).toEqual(previous.map((w) => w.map(({ wallMs }) => ({ wallMs }))))
    // One run per worker: 1 and 2 s of the previous run’s 3 and 4 s per worker, 1.5 of 3.5 on average.
    expect(project([runs(2, 1000)], guide.costs)?.done).toBeCloseTo(1.5 / 3.5)
  })
})
