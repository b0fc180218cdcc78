/**
 * Read-back: what a client writes comes back equal from every read that shows it (spec §1 "Agents can be created,
 * retrieved and deleted. Tasks can be assigned to agents and read back", §2's fields of each resource). Response
 * fields are "not shown" for tools, agents and tasks, so a read may leave a field out (or add its own); what it may
 * not do is show a written field with another value, on any surface: the create answer, a read by id, a list.
 * Tasks are the exception the spec makes explicit ("read back"): every written task field must be there.
 */
import { isDeepStrictEqual } from 'node:util'
import type { Check, CheckContext } from '../check.js'
import { settingName } from '../config.js'
import { eventOf, fieldOf } from '../delivery-body.js'
import { expectStatus, listPage, nextPageCursor, ownId, unservedPart } from '../fixtures.js'
import { type HttpResponse, obj } from '../http.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { deliveryFor, ensureWebhook, receiverUrl, toHook } from './webhooks.js'

type Json = Record<string, unknown>

/** Every written field a read shows with another value, as "field: read vs written". */
function contradictions(read: Json, written: Json): string[] {
  return Object.entries(written)
    .filter(([k, v]) => k in read && !isDeepStrictEqual(read[k], v))
    .map(([k, v]) => `${k}: ${short(read[k], 80)} (written ${short(v, 80)})`)
}

function judge(surface: string, read: Json, written: Json): void {
  const bad = contradictions(read, written)
  assert(bad.length === 0, `${surface} shows written fields with other values: ${bad.join('; ')}`)
}

/** The item with the given own id on the pages of a list (bounded walk), or undefined when it never shows. */
async function findInList(
  ctx: CheckContext,
  path: string,
  kind: 'agent' | 'tool',
  id: string,
): Promise<Json | 'not served' | undefined> {
  let cursor: string | null | undefined
  for (let i = 0; i < 20; i++) {
    const res: HttpResponse = await ctx.http.get(
      `${path}?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )
    if (
      i === 0 &&
      unservedPart(ctx, res, `GET ${path}`, `the list part (finding the ${kind} in GET ${path})`)
    )
      return 'not served'
    expectStatus(res, 200, `GET ${path}`)
    const { items } = listPage(ctx, res)
    const found = (items ?? []).find((item) => ownId(item, kind) === id)
    if (found) return obj(found)
    const next = nextPageCursor(ctx, res, 200, `GET ${path}?limit=200`)
    if (!next) return undefined
    cursor = next
  }
  return undefined
}

/** Creates the agent `written` describes (deleted at the end) and reads it: its id, the create answer and the read. */
async function createAndReadAgent(
  ctx: CheckContext,
  written: Json,
  what: string,
): Promise<{ id: string; created: Json; read: Json }> {
  const created = await ctx.http.post('/v1/agents', written)
  expectStatus(created, [200, 201], what)
  const id = ownId(created.body, 'agent')
  if (!id) fail(`the agent answer has no id: ${short(created.body)}`)
  ctx.cleanup(`delete agent ${id}`, (http) => http.delete(`/v1/agents/${id}`))
  const read = await ctx.http.get(`/v1/agents/${id}`)
  expectStatus(read, 200, 'GET /v1/agents/{id}')
  return { id, created: obj(created.body), read: obj(read.body) }
}

export const readbackChecks: Check[] = [
  {
    id: 'readback.tool-fields-everywhere',
    title:
      'A tool’s registered fields come back equal wherever they are shown: the registration answer, the read by id, the list',
    level: 'core',
    clauses: ['S2.7', 'S1.5', 'S4.7'],
    async run(ctx) {
      const hint = ctx.config.profile.tools.succeed
      const written: Json = {
        name: ctx.name('tool-readback'),
        provider: hint.provider,
        input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
        output_schema: { type: 'string' },
        policy_binding: { envelope: 'default', required_scopes: ['tools:read'] },
        idempotent: false,
      }
      const created = await ctx.http.post('/v1/tools', written)
      expectStatus(created, [200, 201], 'registering a tool')
      const id = ownId(created.body, 'tool')
      if (!id) fail(`the registration answered no tool id: ${short(created.body)}`)
      ctx.cleanup(`retire tool ${String(written.name)}`, (http) => http.delete(`/v1/tools/${id}`))
      judge('the registration answer', obj(created.body), written)
      const one = await ctx.http.get(`/v1/tools/${id}`)
      expectStatus(one, 200, 'GET /v1/tools/{tool_id}')
      assert(obj(one.body).name === written.name, `the tool reads back named ${short(obj(one.body).name)}`)
      judge('GET /v1/tools/{tool_id}', obj(one.body), written)
      const listed = await findInList(ctx, '/v1/tools', 'tool', id)
      if (listed === undefined) fail(`tool ${id} is not on any page of GET /v1/tools`)
      if (listed !== 'not served') judge('the tool’s item in GET /v1/tools', listed, written)
    },
  },
  {
    id: 'readback.agent-fields-everywhere',
    title:
      'An agent’s name, behavior and capabilities come back equal from the create answer, the read and a list',
    level: 'core',
    clauses: ['S2.8', 'S1.7', 'S4.13'],
    async run(ctx) {
      const written: Json = {
        name: ctx.name('agent-readback'),
        behavior: 'supervised',
        capabilities: ['search', 'summarise', 'file'],
      }
      const { id, created, read } = await createAndReadAgent(ctx, written, 'creating an agent')
      judge('the create answer', created, written)
      judge('GET /v1/agents/{id}', read, written)
      // The agent list is the reference profile's extension: judged where it is served.
      const listed = await findInList(ctx, '/v1/agents', 'agent', id)
      if (listed !== undefined && listed !== 'not served')
        judge('the agent’s item in GET /v1/agents', listed, written)
    },
  },
  {
    id: 'readback.task-fields-everywhere',
    title:
      'A task reads back with every field written (description, data_source, priority), equal everywhere',
    level: 'core',
    clauses: ['S2.9', 'S1.7', 'S4.14'],
    async run(ctx) {
      // §1 "Tasks can be assigned to agents and read back": each written field is part of what is read back.
      const agent = await ctx.fx.agent()
      const written: Json = {
        description: ctx.name('readback task'),
        data_source: 's3://conformance/readback.csv',
        priority: 2,
      }
      const created = await ctx.http.post(`/v1/agents/${agent}/tasks`, written)
      expectStatus(created, [200, 201, 202], 'assigning a task')
      const id = ownId(created.body, 'task')
      if (!id) fail(`the task answer has no id: ${short(created.body)}`)
      judge('the assign answer', obj(created.body), written)
      const read = obj((await ctx.http.get(`/v1/tasks/${id}`)).body)
      const missing = Object.keys(written).filter((k) => !(k in read))
      assert(
        missing.length === 0,
        `GET /v1/tasks/{id} does not read back ${missing.join(', ')}: ${short(read)}`,
      )
      judge('GET /v1/tasks/{id}', read, written)
    },
  },
  {
    id: 'readback.agent-envelope',
    title: 'An agent created with a policy_envelope reads back with it, in the create answer and the read',
    level: 'profile',
    clauses: ['S2.8', 'S1.7', 'S4.13'],
    async run(ctx) {
      // Profile: §2's agent create request has name, behavior and capabilities; the agent's policy_envelope (the
      // envelope its runs resolve by default) is the reference's extension. Written, it reads back as written.
      const written: Json = {
        name: ctx.name('agent-envelope'),
        behavior: 'autonomous',
        policy_envelope: 'restricted',
      }
      const { created, read } = await createAndReadAgent(
        ctx,
        written,
        'creating an agent with a policy_envelope',
      )
      for (const [surface, body] of [
        ['the create answer', created],
        ['GET /v1/agents/{id}', read],
      ] as const)
        assert(
          body.policy_envelope === 'restricted',
          `${surface} shows policy_envelope ${short(body.policy_envelope)}, written restricted`,
        )
    },
  },
  {
    id: 'readback.task-run-in-assign-answer',
    title: 'A task’s assign answer names the run (run_id) that a read of the task names',
    level: 'profile',
    clauses: ['S2.9', 'S1.7', 'S4.14'],
    async run(ctx) {
      // Profile: §2's task has description, data_source and priority; the run that carries it out is the
      // reference's field (run_id). The assign answer is the task once its run started, as a read right after.
      const agent = await ctx.fx.agent()
      const created = await ctx.http.post(`/v1/agents/${agent}/tasks`, { description: ctx.name('task run') })
      expectStatus(created, [200, 201, 202], 'assigning a task')
      const id = ownId(created.body, 'task')
      if (!id) fail(`the task answer has no id: ${short(created.body)}`)
      const read = obj((await ctx.http.get(`/v1/tasks/${id}`)).body)
      assert(typeof read.run_id === 'string', `GET /v1/tasks/{id} names no run_id: ${short(read)}`)
      assert(
        obj(created.body).run_id === read.run_id,
        `the assign answer names run_id ${short(obj(created.body).run_id)}, the read ${short(read.run_id)}`,
      )
    },
  },
  {
    id: 'readback.awaiting-approval-event',
    title:
      'The run.awaiting_approval delivery names its run, the run’s agent and one of the run’s pending approvals with the step_id, queue and reason its inspection lists',
    level: 'core',
    clauses: ['S6.4', 'S2.4', 'S2.1'],
    async run(ctx) {
      // The spec says which event carries which resource only here. §6: "run.awaiting_approval | A step needs
      // approval", its delivery body "run_id, agent_id, step_id, queue, reason"; §2 Run: "awaiting | Pending
      // approvals, returned on inspection. Each item has step_id (string), queue (string, the approval queue) and
      // reason (string)". The delivery announces one of those pending approvals, so it names the same run, the
      // run's own agent, and that approval's step, queue and reason. (Other events' bodies are "not shown".)
      const { body, run } = await deliveryFor(ctx, 'run.awaiting_approval')
      const problems: string[] = []
      if (body.agent_id !== run.agentId)
        problems.push(`agent_id is ${short(body.agent_id)}, the run's agent is ${run.agentId}`)
      // The inspection taken while the run awaited approval; once more if it listed nothing yet.
      let awaiting = Array.isArray(run.waiting.awaiting) ? (run.waiting.awaiting as unknown[]).map(obj) : []
      if (!awaiting.some((a) => a.step_id === body.step_id)) {
        const again = obj((await ctx.http.get(`/v1/runs/${run.runId}`)).body)
        if (Array.isArray(again.awaiting)) awaiting = [...awaiting, ...(again.awaiting as unknown[]).map(obj)]
      }
      const item = awaiting.find((a) => a.step_id === body.step_id)
      if (!item)
        problems.push(
          `step_id ${short(body.step_id)} is none of the run's pending approvals (awaiting ${short(awaiting)})`,
        )
      else
        for (const f of ['queue', 'reason'])
          if (!isDeepStrictEqual(body[f], item[f]))
            problems.push(
              `${f} is ${short(body[f])}, the run's awaiting item for that step says ${short(item[f])}`,
            )
      assert(
        problems.length === 0,
        `the run.awaiting_approval delivery of run ${run.runId} differs from the run: ${problems.join('; ')}`,
      )
    },
  },
  {
    id: 'readback.run-events-match-the-run',
    title:
      'A run’s terminal event (run.succeeded) shows the run’s fields with the values its inspection reads: agent, status, outcome',
    level: 'profile',
    clauses: ['S1.8', 'S6.3', 'S2.1'],
    async run(ctx) {
      // Profile: §6 "Delivery bodies of events other than run.awaiting_approval: not shown", so what a run.succeeded
      // body carries is the deployment's choice. The reference's carries the run's agent_id, status and outcome;
      // whatever of the run's fields a terminal event shows, it shows as the run ended, so as its inspection reads.
      receiverUrl(ctx)
      const hook = await ensureWebhook(ctx)
      const agent = await ctx.fx.newToolAgent([await ctx.fx.tool('succeed')])
      const { runId } = await ctx.fx.startRun(agent)
      const delivery = await ctx.receiver!.waitFor(
        (d) => toHook(d, hook) && fieldOf(d, 'run_id') === runId && eventOf(d) === 'run.succeeded',
        ctx.config.waitMs,
      )
      if (!delivery?.body)
        fail(
          `no run.succeeded delivery of run ${runId} within ${ctx.config.waitMs} ms (raise ${settingName('wait-ms')})`,
        )
      const run = await ctx.fx.inspect(runId)
      const shared = ['agent_id', 'status', 'outcome', 'task_id', 'policy_envelope', 'mode', 'trace_level']
      const written = Object.fromEntries(shared.filter((f) => f in run).map((f) => [f, run[f]]))
      assert(
        delivery.body.agent_id === agent.id,
        `agent_id is ${short(delivery.body.agent_id)}, the run's agent is ${agent.id}`,
      )
      judge(`the run.succeeded delivery of run ${runId}`, delivery.body, written)
    },
  },
]
