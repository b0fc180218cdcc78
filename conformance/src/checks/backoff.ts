/**
 * Spec §6: "Webhook deliveries ... are retried with exponential backoff". One delivery's gaps prove nothing when
 * the deployment jitters (full jitter draws each wait from [0, base·2^n], so a gap may be shorter than the one
 * before), and the spec leaves the base, the jitter and the scheduler open. What every exponential backoff does
 * is make the expected wait grow with each failure: over many deliveries failed the same number of times, the
 * mean wait before the third attempt of each is larger than before the first. This check measures exactly that.
 */
import { randomBytes } from 'node:crypto'
import type { Check, CheckContext } from '../check.js'
import { settingName } from '../config.js'
import { expectStatus } from '../fixtures.js'
import { obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import { assert, fail } from '../types.js'
import { receiverUrl } from './webhooks.js'

/** Subscriptions and failing runs of the probe: SUBSCRIPTIONS × RUNS deliveries of run.failed. */
const SUBSCRIPTIONS = 12
const RUNS = 4
/** Attempts answered 500 per delivery: the waits before retries 1, 2 and 3 are compared. */
const FAILURES = 3
/** The mean last wait must exceed the mean first wait by this factor (doubling twice gives 4× in expectation). */
export const GROWTH_FACTOR = 1.5

type Body = Record<string, unknown> | undefined
const tagOf = (path: string) => (path.split('?')[0] ?? '').split('/').pop() ?? ''
const eventOf = (d: Delivery) => d.body?.event ?? d.body?.type

/** Means of the waits before each retry, over deliveries that reached their last attempt. */
export function meanGaps(attempts: Delivery[][], retries: number): number[] {
  const complete = attempts.filter((a) => a.length > retries)
  return Array.from({ length: retries }, (_, i) =>
    complete.length === 0
      ? 0
      : complete.reduce((n, a) => n + (a[i + 1]!.receivedAt - a[i]!.receivedAt), 0) / complete.length,
  )
}

export const backoffChecks: Check[] = [
  {
    id: 'webhooks.retry-gaps-grow',
    title:
      'Retries back off: over many deliveries failed three times, the mean wait grows from the first retry to the third',
    level: 'core',
    clauses: ['S6.2'],
    // It waits on the deployment's backoff with subscriptions and runs of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx: CheckContext) {
      const base = receiverUrl(ctx)
      const tags = new Set<string>()
      await Promise.all(
        Array.from({ length: SUBSCRIPTIONS }, async () => {
          const tag = ctx.name('backoff')
          // run.failed keeps these subscriptions quiet: the other checks fail few runs.
          const res = await ctx.http.post('/v1/webhooks', {
            url: `${base}/${tag}`,
            events: ['run.failed'],
            secret: `whsec-conf-${randomBytes(12).toString('hex')}`,
          })
          expectStatus(res, [200, 201], 'subscribing to run.failed for the backoff probe')
          const id = obj(res.body).webhook_id ?? obj(res.body).id
          if (typeof id === 'string')
            ctx.cleanup(`delete webhook ${id}`, () => ctx.http.delete(`/v1/webhooks/${id}`))
          tags.add(tag)
        }),
      )
      const tool = await ctx.fx.tool('fail')
      const agent = await ctx.fx.newAgent('autonomous', [tool.name])
      const runs = new Set<string>()
      const ours = (b: Body, path: string) =>
        tags.has(tagOf(path)) && typeof b?.run_id === 'string' && runs.has(b.run_id)
      const key = (b: Body, path: string) => `${tagOf(path)} ${String(b?.run_id)}`
      ctx.receiver!.failEach(ours, key, FAILURES)
      for (let i = 0; i < RUNS; i++) runs.add((await ctx.fx.startRun(agent)).runId)
      // Each delivery's attempts in arrival order (the receiver's list is in arrival order).
      const byDelivery = () => {
        const map = new Map<string, Delivery[]>()
        for (const d of ctx.receiver!.deliveries)
          if (ours(d.body, d.path) && eventOf(d) === 'run.failed') {
            const k = key(d.body, d.path)
            map.set(k, [...(map.get(k) ?? []), d])
          }
        return [...map.values()]
      }
      const expected = SUBSCRIPTIONS * RUNS
      const waitMs = ctx.config.waitMs * 2
      await ctx.receiver!.settle(() => {
        const all = byDelivery()
        return all.length === expected && all.every((a) => a.length > FAILURES)
      }, waitMs)
      const attempts = byDelivery()
      const done = attempts.filter((a) => a.length > FAILURES).length
      if (done < expected)
        fail(
          `${expected - done} of ${expected} run.failed deliveries answered 500 ${FAILURES} times did not reach attempt ${FAILURES + 1} within ${waitMs} ms; if this deployment's backoff is longer, the suite's wait is the cause: raise ${settingName('wait-ms')}`,
        )
      const gaps = meanGaps(attempts, FAILURES)
      const [first, last] = [gaps[0]!, gaps[FAILURES - 1]!]
      if (ctx.config.verbose)
        ctx.log(
          `    backoff: mean waits before retries 1..${FAILURES}: ${gaps.map((g) => Math.round(g)).join(', ')} ms over ${done} deliveries`,
        )
      assert(
        last >= GROWTH_FACTOR * first,
        `over ${done} deliveries answered 500 ${FAILURES} times, the mean wait before retry ${FAILURES} (${Math.round(last)} ms) is not ${GROWTH_FACTOR}× the mean wait before retry 1 (${Math.round(first)} ms): mean waits ${gaps.map((g) => Math.round(g)).join(', ')} ms do not grow as a backoff's do`,
      )
    },
  },
]
