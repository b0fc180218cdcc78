/**
 * Spec §1 and §6: "Every state change emits an event", and events go to webhook subscribers. The spec names five
 * kinds; `run.failed` is checked at core level (a run with a failing tool must announce its failure). Every other
 * kind the contract lists (run.paused, agent.created, task.*, tool.*, ingest.batch_accepted...) is the reference
 * profile's decision (`x-spec-gap` on EventKind), so the check that each of them is delivered is profile.
 */
import type { Check } from '../check.js'
import { eventOf, fieldOf } from '../delivery-body.js'
import { assert } from '../types.js'
import { short } from '../wait.js'
import { awaitKinds, causeEveryKind, contractEventKinds } from './every-kind.js'
import { ensureWebhook, ownHook, receiverUrl, toHook } from './webhooks.js'

export const eventChecks: Check[] = [
  {
    id: 'webhooks.run-failed-delivered',
    title: 'A run whose tool fails is announced to the subscriber as run.failed',
    level: 'core',
    clauses: ['S1.8', 'S6.3'],
    async run(ctx) {
      // §6: "run.failed | A run failed." and §1 "Every state change emits an event".
      receiverUrl(ctx)
      const hook = await ensureWebhook(ctx)
      const tool = await ctx.fx.tool('fail')
      const { runId } = await ctx.fx.startRun(await ctx.fx.newToolAgent([tool]))
      const final = await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.terminal(s), 'ended')
      assert(
        ctx.fx.statuses.is(final.status, 'failed'),
        `a run of the failing tool ended ${short(final.status)}, not ${ctx.fx.statuses.named('failed')}`,
      )
      const failed = await ctx.receiver!.waitFor(
        (d) => toHook(d, hook) && fieldOf(d, 'run_id') === runId && eventOf(d) === 'run.failed',
        ctx.config.waitMs,
      )
      assert(
        failed,
        `run ${runId} failed but no run.failed delivery reached the subscriber within ${ctx.config.waitMs} ms (raise --wait-ms if this deployment delivers later)`,
      )
    },
  },
  {
    id: 'webhooks.every-event-kind',
    title:
      'Every event kind the contract lists is delivered to a subscription to all of them (agents, tasks, tools, runs, policy, ingest)',
    level: 'profile',
    clauses: ['S1.8', 'S6.3'],
    // Not alongside other checks: a subscription to every kind also gets every event they cause (hundreds of
    // tool.registered from the pagination checks), one delivery at a time, and would fall behind.
    async run(ctx) {
      const kinds = contractEventKinds(ctx)
      assert(kinds.length > 0, 'the contract lists no EventKind enum')
      const every = await ownHook(ctx, 'every-kind', kinds, { what: 'subscribing to every event kind' })
      await causeEveryKind(ctx)
      const missing = await awaitKinds(ctx, kinds, every.mine)
      if (every.id) await ctx.http.delete(`/v1/webhooks/${every.id}`)
      assert(
        missing.length === 0,
        `no delivery of ${missing.join(', ')} reached a subscription to every kind within ${ctx.config.waitMs} ms`,
      )
    },
  },
]
