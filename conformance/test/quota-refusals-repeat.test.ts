/**
 * `idempotency.quota-refusals` run again with the same quota-limited identity, as a team re-running the suite against
 * one deployment within a day would: the stored answers an earlier run left (kept 24 hours) fill the workspace's
 * quota, and the parts that need room for one more are `partial`, naming why, never a failure of the deployment.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type ProxiedReference, startProxiedReference } from './proxied-reference.js'

let t: ProxiedReference

beforeAll(async () => {
  t = await startProxiedReference()
}, 60_000)

afterAll(() => t?.stop())

it('passes on a fresh workspace, then is partial (not failed) once earlier runs filled its stored answers', async () => {
  const outcomes: { outcome: string; message: string }[] = []
  for (let run = 1; run <= 3; run++) {
    const summary = await t.run(t.config(['--seed', String(run)]), ['idempotency.quota-refusals'])
    const r = summary.results.find((x) => x.id === 'idempotency.quota-refusals')
    outcomes.push({ outcome: r?.outcome ?? 'missing', message: r?.message ?? '' })
  }
  expect(outcomes[0]?.outcome, outcomes[0]?.message).toBe('pass')
  for (const o of outcomes.slice(1)) {
    expect(o.outcome, o.message).toBe('partial')
    expect(o.message).toMatch(/stored answers are full from an earlier run/)
  }
}, 120_000)
