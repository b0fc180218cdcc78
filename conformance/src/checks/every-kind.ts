/**
 * Every event kind the contract lists, caused once: what the checks that follow each kind to a subscriber (a
 * webhook, a chat or paging destination) share. The kinds beyond §6's five are the reference profile's
 * (`x-spec-gap` on EventKind), so only profile checks cause all of them.
 */
import type { CheckContext } from '../check.js'
import { eventOf } from '../delivery-body.js'
import { expectStatus, ownId } from '../fixtures.js'
import { obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import type { ToolRef } from '../toolrun.js'
import { fail } from '../types.js'
import { short } from '../wait.js'
import { batch } from './ingest.js'

/** The field naming an event's subject, by the kind's family: its run, else its task, agent, tool or connector. */
const SUBJECT_FIELD: Record<string, string> = {
  run: 'run_id',
  policy: 'run_id',
  task: 'task_id',
  agent: 'agent_id',
  tool: 'tool_id',
  ingest: 'connector_id',
}

export const subjectField = (kind: string): string | undefined => SUBJECT_FIELD[kind.split('.')[0] ?? '']

/** The event kinds the contract lists (the EventKind schema's enum), in its order. */
export function contractEventKinds(ctx: CheckContext): string[] {
  const schema = obj(ctx.contract.deref(ctx.contract.at('/components/schemas/EventKind')))
  return Array.isArray(schema.enum) ? schema.enum.map(String) : []
}

/** Waits (bounded by --wait-ms, for all kinds together) for a delivery of each kind; answers the kinds missing. */
export async function awaitKinds(
  ctx: CheckContext,
  kinds: string[],
  arrived: (d: Delivery) => boolean,
): Promise<string[]> {
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

/** Why `causeEveryKind` made each of its agents: what it does with the agent. */
export type AgentPurpose = 'created' | 'succeeds' | 'fails' | 'controlled' | 'denied'

/**
 * The agents whose events a kind surely has among what `causeEveryKind` does, by purpose (an agent created and
 * deleted; a task that succeeds, one that fails, one taken through approval, pause, resume and cancel; a run the
 * policy denies). A kind may have more (a denied run's end, a controlled run's start): those are the deployment's.
 */
export const KIND_CAUSED_BY: Record<string, AgentPurpose[]> = {
  'agent.created': ['created'],
  'agent.deleted': ['created'],
  'task.created': ['succeeds', 'fails', 'controlled'],
  'task.succeeded': ['succeeds'],
  'task.failed': ['fails'],
  'task.cancelled': ['controlled'],
  'run.started': ['succeeds', 'fails'],
  'run.succeeded': ['succeeds'],
  'run.failed': ['fails'],
  'run.awaiting_approval': ['controlled'],
  'run.paused': ['controlled'],
  'run.resumed': ['controlled'],
  'run.cancelled': ['controlled'],
  'policy.denied': ['denied'],
}

/** What `causeEveryKind` made, so a check can tell its own events from those of checks running alongside. */
export interface EveryKindCaused {
  /**
   * Every agent it created: the events of their runs and tasks name them. Besides those of `by`, an agent deleted
   * while its run awaited approval (§2: deleting "terminates" the agent; the reference cancels the run, saying why
   * in its outcome's error).
   */
  agents: string[]
  /** The same agents by what they were made for. */
  by: Record<AgentPurpose, string>
  /** The agent deleted while its run awaited approval. */
  orphaned: string
  /** The tool it registered and retired. */
  tool: string
  /** The connector it ingested a batch into. */
  connector: string
}

/** A run of a supervised agent taken through awaiting_approval, pause, resume and cancel, as a task. */
async function controlledTask(ctx: CheckContext, tool: ToolRef): Promise<string> {
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
  return agent
}

/** An agent deleted while its run awaits approval: the run ends with the agent, for the reason its deletion gives. */
async function orphanedRun(ctx: CheckContext, tool: ToolRef): Promise<string> {
  const agent = await ctx.fx.newToolAgent([tool], ctx.config.profile.approvalBehavior)
  const { runId } = await ctx.fx.startRun(agent)
  await ctx.fx.waitForStatus(runId, (s) => s === 'awaiting_approval', 'awaiting approval')
  expectStatus(
    await ctx.http.delete(`/v1/agents/${agent.id}`),
    [200, 204],
    'deleting an agent whose run awaits approval',
  )
  return agent.id
}

/**
 * One event of each kind the contract lists: a tool registered and retired, an agent created and deleted, tasks
 * that succeed, fail and are cancelled (with their runs), a run that awaits approval and is paused, resumed and
 * cancelled, a policy denial (the reference's `restricted` envelope allows three tool calls; the plan asks for four)
 * and an ingested batch; and a run whose agent is deleted while it awaits approval.
 */
export async function causeEveryKind(ctx: CheckContext): Promise<EveryKindCaused> {
  const [ok, failing] = [await ctx.fx.tool('succeed'), await ctx.fx.tool('fail')]
  const connector = ctx.name('conn-ev')
  const [tool, created, succeeds, fails, controlled, denied, orphaned] = await Promise.all([
    // tool.registered, tool.retired
    (async () => {
      const t = await ctx.fx.newTool('succeed')
      expectStatus(await ctx.http.delete(`/v1/tools/${t.id}`), [200, 204], 'retiring a tool')
      return t.id
    })(),
    // agent.created, agent.deleted
    (async () => {
      const res = await ctx.http.post('/v1/agents', { name: ctx.name('agent-ev'), behavior: 'autonomous' })
      expectStatus(res, 201, 'creating an agent')
      const id = ownId(res.body, 'agent')
      if (!id) fail(`agent creation answered no agent_id: ${short(res.body)}`)
      expectStatus(await ctx.http.delete(`/v1/agents/${id}`), [200, 204], 'deleting an agent')
      return id
    })(),
    // task.created, task.succeeded, run.started, run.succeeded
    (async () => {
      const agent = (await ctx.fx.newToolAgent([ok])).id
      const res = await ctx.http.post(`/v1/agents/${agent}/tasks`, { description: 'events: succeeds' })
      expectStatus(res, 201, 'assigning a task')
      return agent
    })(),
    // task.failed, run.failed
    (async () => {
      const agent = (await ctx.fx.newToolAgent([failing])).id
      const res = await ctx.http.post(`/v1/agents/${agent}/tasks`, { description: 'events: fails' })
      expectStatus(res, 201, 'assigning a task')
      return agent
    })(),
    // run.awaiting_approval, run.paused, run.resumed, run.cancelled, task.cancelled
    controlledTask(ctx, ok),
    // policy.denied
    (async () => {
      const agent = await ctx.fx.newToolAgent([ok, ok, ok, ok])
      await ctx.fx.startRun(agent, { policy_envelope: 'restricted' })
      return agent.id
    })(),
    // run.cancelled, its agent deleted while it awaited approval
    orphanedRun(ctx, ok),
    // ingest.batch_accepted
    (async () => {
      const res = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, { records: batch(ctx, 2) })
      expectStatus(res, 202, 'ingesting a batch')
    })(),
  ])
  const by = { created, succeeds, fails, controlled, denied }
  return { tool, agents: [...Object.values(by), orphaned], by, orphaned, connector }
}
