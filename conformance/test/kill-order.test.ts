/** A mutant run's order: core checks, then profile, the sweep last; within a group, the checks that killed most first. */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { Check } from '../src/check.js'
import { coreFirst } from '../src/runner.js'
import { KillOrder } from '../stryker/kill-order.mjs'

const check = (id: string, level: 'core' | 'profile'): Check => ({
  id,
  title: id,
  level,
  clauses: [],
  run: async () => {},
})

describe("a --bail run's order", () => {
  const checks = [
    check('runs.a', 'profile'),
    check('sweep.bodies', 'profile'),
    check('runs.b', 'core'),
    check('runs.c', 'core'),
    check('runs.d', 'profile'),
    check('runs.e', 'core'),
  ]

  it('takes core checks first, then profile ones, the sweep last, each group in the suite order', () => {
    expect(coreFirst(checks).map((c) => c.id)).toEqual([
      'runs.b',
      'runs.c',
      'runs.e',
      'runs.a',
      'runs.d',
      'sweep.bodies',
    ])
  })

  it('puts the checks --first names at the front of their own group, in its order, and nothing across groups', () => {
    const order = coreFirst(checks, ['runs.d', 'runs.e', 'sweep.bodies', 'runs.c', 'missing.one'])
    expect(order.map((c) => c.id)).toEqual(['runs.e', 'runs.c', 'runs.b', 'runs.d', 'runs.a', 'sweep.bodies'])
  })
})

describe('KillOrder', () => {
  const report = (...failed: string[]) => ({
    results: [
      ...failed.map((id) => ({ id, outcome: 'fail' })),
      { id: 'runs.passed', outcome: 'pass' },
      { id: 'runs.skipped', outcome: 'skip' },
    ],
  })

  it("names a section's killing checks, most kills first, ties in the order they first killed, the sweep never", () => {
    const order = new KillOrder()
    expect(order.first('runs')).toEqual([])
    order.add('runs', report('runs.b', 'sweep.bodies'))
    order.add('runs', report('runs.c'))
    order.add('runs', report('runs.c', 'runs.d'))
    order.add('stream', report('stream.x'))
    order.add(undefined, report('runs.z'))
    expect(order.first('runs')).toEqual(['runs.c', 'runs.b', 'runs.d'])
    expect(order.first('stream')).toEqual(['stream.x'])
    order.add('runs', report('runs.b'))
    order.add('runs', report('runs.b'))
    expect(order.first('runs')).toEqual(['runs.b', 'runs.c', 'runs.d'])
  })

  it("takes the mutated module's own killers first, then the rest of its section's, most kills first in each", () => {
    const order = new KillOrder()
    order.add('destinations', report('destinations.slack'), 'src/slack.ts')
    order.add('destinations', report('destinations.slack'), 'src/slack.ts')
    order.add('destinations', report('destinations.chat'), 'src/slack.ts')
    order.add('destinations', report('destinations.pagerduty'), 'src/pagerduty.ts')
    order.add('destinations', report('destinations.chat'), 'src/pagerduty.ts')
    order.add('destinations', report('destinations.chat'), 'src/describe.ts')
    expect(order.first('destinations', 'src/pagerduty.ts')).toEqual([
      'destinations.pagerduty',
      'destinations.chat',
      'destinations.slack',
    ])
    expect(order.first('destinations', 'src/slack.ts')).toEqual([
      'destinations.slack',
      'destinations.chat',
      'destinations.pagerduty',
    ])
    // A module none of whose mutants was killed yet: its section's order.
    expect(order.first('destinations', 'src/nats.ts')).toEqual([
      'destinations.chat',
      'destinations.slack',
      'destinations.pagerduty',
    ])
    expect(order.first('destinations')).toEqual(order.first('destinations', 'src/nats.ts'))
  })

  it("learns from every worker's kills through a shared file, a line still being written counted once it ends", () => {
    const dir = mkdtempSync(join(tmpdir(), 'kill-order-'))
    try {
      const file = join(dir, 'kills.jsonl')
      const one = new KillOrder(file)
      const other = new KillOrder(file)
      expect(other.first('§6 destinations', 'src/pagerduty.ts')).toEqual([])
      one.add('§6 destinations', report('destinations.pagerduty'), 'src/pagerduty.ts')
      one.add('§6 destinations', report('destinations.chat'), 'src/slack.ts')
      other.add('§6 destinations', report('destinations.chat'), 'src/describe.ts')
      // The other worker's kills, and its own, each counted once however often it reads.
      expect(other.first('§6 destinations', 'src/pagerduty.ts')).toEqual([
        'destinations.pagerduty',
        'destinations.chat',
      ])
      expect(other.first('§6 destinations', 'src/pagerduty.ts')).toEqual([
        'destinations.pagerduty',
        'destinations.chat',
      ])
      expect(one.first('§6 destinations', 'src/nats.ts')).toEqual([
        'destinations.chat',
        'destinations.pagerduty',
      ])
      // Half a line (a worker's append seen mid-write) waits; the whole line then counts.
      const line = `${JSON.stringify({ section: '§6 destinations', module: 'src/nats.ts', failed: ['destinations.event-bus'] })}\n`
      appendFileSync(file, line.slice(0, 20))
      expect(one.first('§6 destinations', 'src/nats.ts')).toEqual([
        'destinations.chat',
        'destinations.pagerduty',
      ])
      appendFileSync(file, line.slice(20))
      expect(one.first('§6 destinations', 'src/nats.ts')).toEqual([
        'destinations.event-bus',
        'destinations.chat',
        'destinations.pagerduty',
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
