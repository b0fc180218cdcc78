/** CloudEvents 1.0 over HTTP to a downstream sink: the binary and the structured content mode. */
import type { Check, CheckContext } from '../../check.js'
import { expectStatus, ownId } from '../../fixtures.js'
import { obj } from '../../http.js'
import type { Delivery } from '../../receiver.js'
import { assert, fail } from '../../types.js'
import { short } from '../../wait.js'
import { batch } from '../ingest.js'
import { atTag } from '../webhooks.js'
import { cloudEventsSink, ensureSink, type Sink, secretKept } from './sinks.js'

/** CloudEvents 1.0 HTTP binary mode: the required attributes as ce-* headers, the body the event's data. */
function binaryCloudEventProblems(d: Delivery): string[] {
  const h = d.headers
  const problems: string[] = []
  if (h['ce-specversion'] !== '1.0') problems.push(`ce-specversion is ${h['ce-specversion']}, not 1.0`)
  for (const attribute of ['ce-id', 'ce-type', 'ce-source'])
    if (typeof h[attribute] !== 'string' || h[attribute] === '') problems.push(`no ${attribute} header`)
  if (!/^application\/json\b/.test(h['content-type'] ?? ''))
    problems.push(`content-type ${h['content-type']}, not application/json`)
  if (d.body === undefined) problems.push('the body is not JSON')
  else {
    if (d.body.id !== h['ce-id'])
      problems.push(`ce-id ${h['ce-id']} is not the event id ${String(d.body.id)}`)
    if (d.body.event !== h['ce-type'])
      problems.push(`ce-type ${h['ce-type']} is not the kind ${String(d.body.event)}`)
    // The profile's `subject`: what the event is about, the run, else the task, agent, tool or connector.
    const about = ['run_id', 'task_id', 'agent_id', 'tool_id', 'connector_id']
      .map((k) => d.body?.[k])
      .find((v) => typeof v === 'string')
    if (h['ce-subject'] !== about)
      problems.push(`ce-subject ${h['ce-subject']} is not what the event is about (${String(about)})`)
  }
  return problems
}

/**
 * CloudEvents 1.0 HTTP structured mode: the whole event as one JSON object (`application/cloudevents+json`), its
 * required attributes in the body, the delivery body as `data`; `source` the destination's own, `subject` what the
 * event is about.
 */
function structuredCloudEventProblems(d: Delivery, source: string, subject: unknown): string[] {
  const problems: string[] = []
  if (!/^application\/cloudevents\+json\b/.test(d.headers['content-type'] ?? ''))
    problems.push(`content-type ${d.headers['content-type']}, not application/cloudevents+json`)
  const e = d.body
  if (e === undefined) return [...problems, 'the body is not JSON']
  if (e.specversion !== '1.0') problems.push(`specversion is ${short(e.specversion)}, not 1.0`)
  if (typeof e.id !== 'string' || e.id === '') problems.push('no id')
  if (e.source !== source) problems.push(`source is ${short(e.source)}, not the destination's ${source}`)
  if (e.subject !== subject)
    problems.push(`subject is ${short(e.subject)}, not what the event is about (${short(subject)})`)
  const data = obj(e.data)
  if (data.id !== e.id)
    problems.push(`id ${short(e.id)} is not the event id ${short(data.id)} its data carries`)
  if (data.event !== e.type)
    problems.push(`type ${short(e.type)} is not the kind ${short(data.event)} its data carries`)
  return problems
}

/** The `source` a structured sink was created with: its own, from its tag. */
const sourceOf = (sink: Pick<Sink, 'tag'>) => `urn:agentops-conformance:${sink.tag}`

/** A cloudevents destination in structured mode with a source of its own, for `kinds`; one per slot and run. */
const structuredSink = (ctx: CheckContext, slot: string, kinds: string[]) =>
  cloudEventsSink(ctx, slot, kinds, (tag) => ({ mode: 'structured', source: sourceOf({ tag }) }))

export const cloudeventsBinary: Check = {
  id: 'destinations.cloudevents-binary',
  title:
    'A cloudevents destination gets each event it lists once, as a CloudEvents 1.0 binary-mode request whose id is the event id, whose type is its kind and whose subject is what it is about; its secret is never answered',
  level: 'profile',
  clauses: ['S6.5'],
  async run(ctx) {
    const sink = await ensureSink(ctx)
    // Two agents, two events: each CloudEvent is its own event's, not one built before and sent again.
    for (const agent of [await ctx.fx.newAgent(), await ctx.fx.newAgent()]) {
      const got = await ctx.receiver!.waitFor(
        (d) => atTag(sink.tag)(d) && d.body?.agent_id === agent,
        ctx.config.waitMs,
      )
      if (!got)
        fail(
          `no CloudEvent for agent ${agent}'s agent.created reached the receiver within ${ctx.config.waitMs} ms`,
        )
      const problems = binaryCloudEventProblems(got)
      assert(problems.length === 0, problems.join('; '))
    }
    await secretKept(ctx, sink)
  },
}

export const cloudeventsStructured: Check = {
  id: 'destinations.cloudevents-structured',
  title:
    "A cloudevents destination in structured mode gets each event it lists as one application/cloudevents+json object: its source the destination's, its subject what the event is about (the run, else the task, tool or connector), its data the event",
  level: 'profile',
  clauses: ['S6.5'],
  async run(ctx) {
    const sink = await structuredSink(ctx, 'cloudevents-structured', [
      'run.started',
      'task.created',
      'tool.registered',
      'ingest.batch_accepted',
    ])
    // A second one with a source of its own, for one of those kinds: an event goes to each as its own CloudEvent.
    const other = await structuredSink(ctx, 'cloudevents-structured-other', ['tool.registered'])
    // One event of each kind, each about something else: a run (which names its agent too), a task (its agent
    // too), a tool and a connector.
    const tool = await ctx.fx.newTool('succeed')
    const agent = await ctx.fx.newAgent()
    const task = await ctx.http.post(`/v1/agents/${agent}/tasks`, { description: 'cloudevents structured' })
    expectStatus(task, [200, 201, 202], 'POST /v1/agents/{id}/tasks')
    const taskId = ownId(task.body, 'task')
    assert(taskId, `the task answer has no task_id: ${short(task.body)}`)
    const connector = ctx.name('ce-conn')
    const ingest = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, {
      records: batch(ctx, 1),
    })
    expectStatus(ingest, 202, 'POST /v1/grid/connectors/{id}/ingest')
    const expected: { kind: string; field: string; value?: string }[] = [
      { kind: 'tool.registered', field: 'tool_id', value: tool.id },
      { kind: 'task.created', field: 'task_id', value: taskId },
      { kind: 'ingest.batch_accepted', field: 'connector_id', value: connector },
      // The run of the task: found by its agent, about its run_id.
      { kind: 'run.started', field: 'run_id' },
    ]
    const deliveries = [
      ...expected.map((e) => ({ ...e, at: sink })),
      { ...(expected[0] as (typeof expected)[number]), at: other },
    ]
    const problems: string[] = []
    await Promise.all(
      deliveries.map(async ({ kind, field, value, at }) => {
        const got = await ctx.receiver!.waitFor((d) => {
          const data = obj(d.body?.data)
          return (
            atTag(at.tag)(d) &&
            data.event === kind &&
            (value === undefined ? data.agent_id === agent : data[field] === value)
          )
        }, ctx.config.waitMs)
        if (!got) {
          problems.push(
            `no structured CloudEvent for ${kind} reached the receiver within ${ctx.config.waitMs} ms`,
          )
          return
        }
        const about = obj(got.body?.data)[field]
        for (const p of structuredCloudEventProblems(got, sourceOf(at), about)) problems.push(`${kind}: ${p}`)
        if (typeof about !== 'string') problems.push(`${kind}: its data has no ${field}`)
      }),
    )
    assert(problems.length === 0, problems.join('; '))
    await secretKept(ctx, sink)
  },
}
