/**
 * Spec §1 and §6: "Every state change emits an event", and events go to webhook subscribers. The spec names five
 * kinds; `run.failed` is checked at core level (a run with a failing tool must announce its failure). Every other
 * kind the contract lists (run.paused, agent.created, task.*, tool.*, ingest.batch_accepted...) is the reference
 * profile's decision (`x-spec-gap` on EventKind), so the check that each of them is delivered is profile.
 */
import type { Check, CheckContext } from '../check.js'
import { expectStatus, ownId } from '../fixtures.js'
import { obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import type { ToolRef } from '../toolrun.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { batch } from './ingest.js'
import { ensureWebhook, ownHook, receiverUrl, toHook } from './webhooks.js'

const eventOf = (d: Delivery) => d.body?.event ?? d.body?.type

/** The event kinds the contract lists (the EventKind schema's enum), in its order. */
export function contractEventKinds(ctx: CheckContext): string[] {
  const schema = obj(ctx.contract.deref(ctx.contract.at('/components/schemas/EventKind')))
  return Array.isArray(schema.enum) ? schema.enum.map(String) : []
}

/** Waits (bounded by --wait-ms, for all kinds together) for a delivery of each kind; answers the kinds missing. */
async function awaitKinds(ctx: CheckContext, kinds: string[], arrived: (d: Delivery) => boolean) {
  const deadline = Date.now() + ctx.config.waitMs
  const missing: string[] = []
  for (const kind of kinds) {
    const found = await ctx.receiver!.waitFor(
      (d) => arrived(d) && eventOf(d) === kind,
      Math.max(0, deadline - Date.now()),
    )
    if (!found) missing.push(kind)
  }
  return missing
}

/** A run of a supervised agent taken through awaiting_approval, pause, resume and cancel, as a task. */
async function controlledTask(ctx: CheckContext, tool: ToolRef): Promise<void> {
  const agent = (await ctx.fx.newToolAgent([tool], ctx.config.profile.approvalBehavior)).id
  const task = await ctx.http.post(`/v1/agents/${agent}/tasks`, { description: 'events: cancelled task' })
  expectStatus(task, 201, 'assigning a task to a supervised agent')
  const runId = obj(task.body).run_id
  if (typeof runId !== 'string') fail(`the task answer names no run_id: ${short(task.body)}`)
  await ctx.fx.waitForStatus(runId, (s) => s === 'awaiting_approval', 'awaiting approval')
  for (const control of ['pause', 'resume', 'cancel']) {
    const res = await ctx.http.post(`/v1/runs/${runId}/${control}`)
    expectStatus(res, [200, 202], `POST /v1/runs/{id}/${control}`)
  }
}

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
      const final = await ctx.fx.waitForStatus(runId, (s) => s === 'failed' || s === 'succeeded', 'ended')
      assert(final.status === 'failed', `a run of the failing tool ended ${short(final.status)}, not failed`)
      const failed = await ctx.receiver!.waitFor(
        (d) => toHook(d, hook) && d.body?.run_id === runId && eventOf(d) === 'run.failed',
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
      const [ok, failing] = [await ctx.fx.tool('succeed'), await ctx.fx.tool('fail')]
      await Promise.all([
        // tool.registered, tool.retired
        (async () => {
          const t = await ctx.fx.newTool('succeed')
          expectStatus(await ctx.http.delete(`/v1/tools/${t.id}`), [200, 204], 'retiring a tool')
        })(),
        // agent.created, agent.deleted
        (async () => {
          const res = await ctx.http.post('/v1/agents', {
            name: ctx.name('agent-ev'),
            behavior: 'autonomous',
          })
          expectStatus(res, 201, 'creating an agent')
          const id = ownId(res.body, 'agent')
          if (!id) fail(`agent creation answered no agent_id: ${short(res.body)}`)
          expectStatus(await ctx.http.delete(`/v1/agents/${id}`), [200, 204], 'deleting an agent')
        })(),
        // task.created, task.succeeded, run.started, run.succeeded
        (async () => {
          const agent = (await ctx.fx.newToolAgent([ok])).id
          const res = await ctx.http.post(`/v1/agents/${agent}/tasks`, { description: 'events: succeeds' })
          expectStatus(res, 201, 'assigning a task')
        })(),
        // task.failed, run.failed
        (async () => {
          const agent = (await ctx.fx.newToolAgent([failing])).id
          const res = await ctx.http.post(`/v1/agents/${agent}/tasks`, { description: 'events: fails' })
          expectStatus(res, 201, 'assigning a task')
        })(),
        // run.awaiting_approval, run.paused, run.resumed, run.cancelled, task.cancelled
        controlledTask(ctx, ok),
        // policy.denied: the reference's `restricted` envelope allows three tool calls; the plan asks for four.
        (async () => {
          const agent = await ctx.fx.newToolAgent([ok, ok, ok, ok])
          await ctx.fx.startRun(agent, { policy_envelope: 'restricted' })
        })(),
        // ingest.batch_accepted
        (async () => {
          const res = await ctx.http.post(`/v1/grid/connectors/${ctx.name('conn-ev')}/ingest`, {
            records: batch(ctx, 2),
          })
          expectStatus(res, 202, 'ingesting a batch')
        })(),
      ])
      const missing = await awaitKinds(ctx, kinds, every.mine)
      if (every.id) await ctx.http.delete(`/v1/webhooks/${every.id}`)
      assert(
        missing.length === 0,
        `no delivery of ${missing.join(', ')} reached a subscription to every kind within ${ctx.config.waitMs} ms`,
      )
    },
  },
]
