/**
 * Spec §6: "Webhook deliveries are signed with HMAC SHA-256 and are retried with exponential backoff." and, in its
 * gaps, "Retry count and backoff timing: not shown." One delivery's gaps prove nothing when the deployment jitters
 * (full jitter draws each wait from [0, base·2^n], so a wait may be shorter than the one before); what every
 * exponential backoff does is make the expected wait grow with each failure.
 *
 * Why profile and not core (conformance/README.md, "Retry gaps stay profile"): a legal deployment may dispatch
 * retries on a tick longer than its base (its first retries then arrive one tick apart, like constant ones) and may
 * stop after three attempts (the count is not shown), so no observation of arrivals at the receiver tells
 * exponential from constant retries for every legal deployment; a core form would fail correct deployments or
 * leave them INCOMPLETE for good. The core checks keep a third attempt with the same event (webhooks.ts).
 *
 * Measured from arrival times at the receiver, the waits also hold the deployment's queueing and this machine's
 * stalls: at load 17, mean arrival gaps of 5.2, 2.9 and 3.0 s hid scheduled waits of about 0.5, 1 and 2 s, so a
 * check on arrival gaps fails correct deployments on a loaded machine. The wait a deployment *scheduled* is
 * free of that noise, and the reference profile's delivery log shows it (`next_attempt_at` of a pending delivery,
 * its `webhook-id` being the `delivery_id`). So this check is profile: it reads the schedule from the log, and a
 * deployment without that log is not judged by it.
 */
import type { Check, CheckContext } from '../check.js'
import { settingName } from '../config.js'
import { fieldOf } from '../delivery-body.js'
import { expectStatus, notServed, pageItems } from '../fixtures.js'
import { obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import { assert, fail, skip } from '../types.js'
import { sleep } from '../wait.js'
import { hookId, ownHook } from './webhooks.js'

/** Subscriptions and failing runs of the probe: SUBSCRIPTIONS × RUNS deliveries of run.failed. */
const SUBSCRIPTIONS = 4
const RUNS = 12
/** Attempts answered 500 per delivery: the waits scheduled after failures 1 and 3 are compared. */
const FAILURES = 3
/** The mean wait scheduled after the third failure must be at least this factor of the one after the first. */
export const GROWTH_FACTOR = 1.5
/** Fewest scheduled waits seen per failure for a judgement (the log is polled, so a very short wait may be missed). */
const MIN_SAMPLES = 16
/**
 * The probe ends once this many deliveries showed the wait after their third failure (and every one is past its
 * first): the slowest of 48 deliveries waits longest, and a wait scheduled after failure 3 does not depend on how
 * long the earlier ones were (full jitter draws each afresh), so the first half to get there is a fair sample.
 */
const LATE_SAMPLES = 24
const POLL_MS = 200
/** The probe's whole wait is at most this many stall windows (waitMs × 2 each), however steady its progress. */
const PROGRESS_BOUND = 4

type Body = Record<string, unknown> | undefined
const tagOf = (path: string) => (path.split('?')[0] ?? '').split('/').pop() ?? ''

/**
 * The wait each delivery's log entry scheduled after its n-th failed attempt: `next_attempt_at` seen while
 * `attempts` was n, minus the time attempt n reached the receiver. Keyed by failure number 1..FAILURES.
 */
export function scheduledWaits(
  schedule: Map<string, number>,
  arrivals: Map<string, number[]>,
): Map<number, number[]> {
  const waits = new Map<number, number[]>()
  for (const [key, nextAt] of schedule) {
    const [id, n] = [key.slice(0, key.lastIndexOf('#')), Number(key.slice(key.lastIndexOf('#') + 1))]
    const arrived = arrivals.get(id)?.[n - 1]
    if (arrived === undefined || n < 1 || n > FAILURES) continue
    waits.set(n, [...(waits.get(n) ?? []), nextAt - arrived])
  }
  return waits
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)

export const backoffChecks: Check[] = [
  {
    id: 'webhooks.retry-gaps-grow',
    title:
      'Retries back off: over many deliveries failed three times, the mean wait scheduled after the third failure is at least 1.5× the one after the first',
    level: 'profile',
    clauses: ['S6.2'],
    // It waits on the deployment's backoff with subscriptions and runs of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx: CheckContext) {
      const hooks = new Map<string, string>()
      await Promise.all(
        Array.from({ length: SUBSCRIPTIONS }, async () => {
          // run.failed keeps these subscriptions quiet: the other checks fail few runs.
          const hook = await ownHook(ctx, 'backoff', ['run.failed'], {
            what: 'subscribing to run.failed for the backoff probe',
          })
          hooks.set(hook.tag, hookId(hook))
        }),
      )
      const probe = await ctx.http.get(`/v1/webhooks/${[...hooks.values()][0]}/deliveries?limit=200`)
      if (notServed(probe))
        skip(
          `no delivery log (GET /v1/webhooks/{id}/deliveries answered ${probe.status}) to read the schedule from`,
        )
      const tool = await ctx.fx.tool('fail')
      const agent = await ctx.fx.newToolAgent([tool])
      const runs = new Set<string>()
      const ours = (b: Body, path: string) => {
        const run = fieldOf({ body: b }, 'run_id')
        return hooks.has(tagOf(path)) && typeof run === 'string' && runs.has(run)
      }
      // Every delivery to these subscriptions is failed, not only those of runs already known to be ours: a run can
      // fail, and its delivery arrive, before the answer that starts it names its id (through a slow proxy it does).
      // Which deliveries are the probe's is decided from the receiver's log once every run id is known.
      ctx.receiver!.failEach(
        (_b, path) => hooks.has(tagOf(path)),
        (b, path) => `${tagOf(path)} ${String(fieldOf({ body: b }, 'run_id'))}`,
        FAILURES,
      )
      for (let i = 0; i < RUNS; i++) runs.add((await ctx.fx.startRun(agent)).runId)

      // `<delivery_id>#<attempts>` → next_attempt_at (ms), the first value the log showed for that state.
      const schedule = new Map<string, number>()
      // Deliveries whose wait after failure FAILURES was scheduled (seen in the log) or that went past it.
      const finished = new Set<string>()
      // The last state the log showed of each delivery, for the failure message.
      const lastSeen = new Map<string, string>()
      const expected = SUBSCRIPTIONS * RUNS
      // A slow deployment on a loaded machine is not a broken one: the wait restarts whenever the log shows
      // progress (a new scheduled wait or a finished delivery), and only a stall of waitMs × 2 ends it. The whole
      // probe is still bounded, by PROGRESS_BOUND stalls' worth of time.
      const stallMs = ctx.config.waitMs * 2
      const hardDeadline = Date.now() + stallMs * PROGRESS_BOUND
      let deadline = Date.now() + stallMs
      let seen = 0
      // The probe's own deliveries by webhook-id (the log's delivery_id), each attempt's arrival in order. Read
      // afresh each time: which deliveries are the probe's is known only once their runs' ids are.
      const ourArrivals = () => {
        const arrivals = new Map<string, number[]>()
        for (const d of ctx.receiver!.deliveries as Delivery[]) {
          const id = d.headers['webhook-id']
          if (typeof id === 'string' && ours(d.body, d.path))
            arrivals.set(id, [...(arrivals.get(id) ?? []), d.receivedAt])
        }
        return arrivals
      }
      const finishedOf = (arrivals: Map<string, number[]>) =>
        [...arrivals.keys()].filter((id) => finished.has(id)).length
      // Enough to judge: every delivery arrived and failed at least twice (so each had its chance to show the wait
      // after failure 1), and LATE_SAMPLES showed the wait after failure FAILURES.
      const enough = () => {
        const arrivals = ourArrivals()
        const waits = scheduledWaits(schedule, arrivals)
        return (
          finishedOf(arrivals) === expected ||
          (arrivals.size === expected &&
            [...arrivals.values()].every((at) => at.length >= 2) &&
            (waits.get(1)?.length ?? 0) >= MIN_SAMPLES &&
            (waits.get(FAILURES)?.length ?? 0) >= LATE_SAMPLES)
        )
      }
      while (!enough() && Date.now() < deadline && Date.now() < hardDeadline) {
        // The log's delivery_id is matched to arrivals by their webhook-id header (the reference profile's): a
        // deployment that sends none is not judged here, as one without the log is not.
        if (
          (ctx.receiver!.deliveries as Delivery[]).some(
            (d) => ours(d.body, d.path) && typeof d.headers['webhook-id'] !== 'string',
          )
        )
          skip(
            "the probe's deliveries carry no webhook-id header to match the delivery log's delivery_id with their arrivals",
          )
        await Promise.all(
          [...hooks.values()].map(async (id) => {
            const res = await ctx.http.get(`/v1/webhooks/${id}/deliveries?limit=200`)
            expectStatus(res, 200, 'GET /v1/webhooks/{id}/deliveries')
            for (const item of pageItems(res.body) ?? []) {
              const d = obj(item)
              const [did, attempts, next] = [d.delivery_id, d.attempts, d.next_attempt_at]
              if (typeof did !== 'string' || typeof attempts !== 'number') continue
              lastSeen.set(did, `attempts ${attempts}, ${String(d.status)}, next ${String(next)}`)
              if (typeof next === 'string' && !schedule.has(`${did}#${attempts}`))
                schedule.set(`${did}#${attempts}`, Date.parse(next))
              if (attempts > FAILURES || schedule.has(`${did}#${FAILURES}`)) finished.add(did)
            }
          }),
        )
        if (schedule.size + finished.size > seen) {
          seen = schedule.size + finished.size
          deadline = Date.now() + stallMs
        }
        await sleep(POLL_MS)
      }
      const arrivals = ourArrivals()
      const done = finishedOf(arrivals)
      if (!enough()) {
        const stuck = [...arrivals]
          .filter(([id]) => !finished.has(id))
          .slice(0, 3)
          .map(
            ([id, at]) => `${id}: ${at.length} attempts received, log: ${lastSeen.get(id) ?? 'never listed'}`,
          )
        fail(
          `${expected - done} of ${expected} run.failed deliveries answered 500 ${FAILURES} times did not fail a third time and show its next wait (the log showed no progress for ${stallMs} ms, or the probe's bound of ${stallMs * PROGRESS_BOUND} ms passed); if this deployment's backoff is longer, raise ${settingName('wait-ms')}; unfinished: ${stuck.join('; ') || 'none reached the receiver'}`,
        )
      }
      const waits = scheduledWaits(schedule, arrivals)
      const [first, last] = [waits.get(1) ?? [], waits.get(FAILURES) ?? []]
      assert(
        first.length >= MIN_SAMPLES && last.length >= MIN_SAMPLES,
        `the delivery log showed the scheduled wait of only ${first.length} deliveries after failure 1 and ${last.length} after failure ${FAILURES} (polled every ${POLL_MS} ms; at least ${MIN_SAMPLES} each are needed)`,
      )
      const means = [1, 2, 3].map((n) => Math.round(mean(waits.get(n) ?? [])))
      if (ctx.config.verbose)
        ctx.log(`    backoff: mean scheduled waits after failures 1..${FAILURES}: ${means.join(', ')} ms`)
      assert(
        mean(last) >= GROWTH_FACTOR * mean(first),
        `over ${expected} deliveries answered 500 ${FAILURES} times, the mean wait scheduled after failure ${FAILURES} (${Math.round(mean(last))} ms, ${last.length} seen) is not ${GROWTH_FACTOR}× the one after failure 1 (${Math.round(mean(first))} ms, ${first.length} seen); means after failures 1..${FAILURES}: ${means.join(', ')} ms: the waits do not grow as a backoff's do`,
      )
    },
  },
]
