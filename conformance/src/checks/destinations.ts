/**
 * Spec §6: "Events can be routed to webhooks and to chat, paging and downstream systems"; how routing is configured
 * is not shown, so every check here is profile: the reference's `/v1/destinations`. The suite's receiver poses as
 * the destination's service and judges each body against that service's documented shape (CloudEvents 1.0's HTTP
 * binding for `cloudevents`). A deployment without `/v1/destinations` skips them.
 */
import { randomBytes } from 'node:crypto'
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { settingName } from '../config.js'
import {
  decideStep,
  expectStatus,
  firstAwaitingStep,
  ownId,
  pageItems,
  unwantedHookUrl,
} from '../fixtures.js'
import { type HttpResponse, obj } from '../http.js'
import { natsTarget } from '../nats.js'
import { type Delivery, hostAndPort } from '../receiver.js'
import { assert, fail, skip } from '../types.js'
import { short } from '../wait.js'
import {
  PAGERDUTY_SEVERITIES,
  pagerDutyEventProblems,
  SLACK_MARKUP_NOTE,
  slackEscapingProblems,
  slackMessageProblems,
} from './destination-bodies.js'
import { contractEventKinds } from './every-kind.js'
import {
  deletedThenGoneProbes,
  type Probe,
  redeliverDuringAttempt,
  redeliverUnknown,
  refusedRedelivery,
  runProbes,
} from './extensions.js'
import { batch } from './ingest.js'
import { decided } from './outcomes.js'
import { atTag, receiverUrl } from './webhooks.js'

/** Whether the deployment serves /v1/destinations (chat, paging and downstream destinations, §6's gap). */
export async function servesDestinations(ctx: CheckContext): Promise<boolean> {
  const probe = await ctx.http.get('/v1/destinations')
  return probe.status !== 404 && probe.status !== 405
}

/** Skips the check where the deployment serves no /v1/destinations. */
export async function skipWithoutDestinations(ctx: CheckContext): Promise<void> {
  if (!(await servesDestinations(ctx)))
    skip('the deployment has no /v1/destinations (no chat, paging or downstream destinations declared)')
}

interface Sink {
  id: string
  tag: string
  /** The write-only secret it was created with: no answer may show it. */
  secret: string
}

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

/** What a check creates a destination with: its type, its kinds, its settings, and the secret no answer may show. */
interface DestinationSpec {
  type: string
  events: string[]
  config: Record<string, unknown>
  secrets: Record<string, string>
  secret: string
  /** The agents whose events it gets (every agent's when absent). */
  agent_ids?: string[]
}

/** A PagerDuty Events API v2 trigger posted at `tag` whose body names every one of `needles` (a run, a step). */
export const pagerTrigger =
  (tag: string, ...needles: string[]) =>
  (d: Delivery): boolean =>
    atTag(tag)(d) && d.body?.event_action === 'trigger' && needles.every((n) => d.raw.includes(n))

/** A PagerDuty Events API v2 resolve posted at `tag` with dedup_key `key`. */
export const pagerResolve =
  (tag: string, key: unknown) =>
  (d: Delivery): boolean =>
    atTag(tag)(d) && d.body?.event_action === 'resolve' && d.body.dedup_key === key

/** The deployment's refusal names the `type` field: it has no destinations of that type. */
export const refusesType = (res: Pick<HttpResponse, 'status' | 'text'>) =>
  res.status >= 400 &&
  res.status < 500 &&
  res.status !== 429 &&
  /\btype\b/.test(res.text) &&
  !/url/i.test(res.text)

/**
 * A destination of its own at the receiver, one per type and suite run; skips when there are no destinations, or
 * none of that type (a refusal naming the `type` field).
 */
const destinations = new WeakMap<object, Map<string, Promise<Sink>>>()
export function ensureDestination(
  ctx: CheckContext,
  type: string,
  spec: (receiver: string, tag: string) => DestinationSpec,
  /** Which of the run's destinations of that type (one per settings a check needs); default the type's own. */
  slot: string = type,
): Promise<Sink> {
  const mine = destinations.get(ctx.config) ?? new Map<string, Promise<Sink>>()
  destinations.set(ctx.config, mine)
  let p = mine.get(slot)
  if (!p) {
    p = (async () => {
      await skipWithoutDestinations(ctx)
      const tag = ctx.name('dest')
      const url = receiverUrl(ctx)
      const { secret, ...body } = spec(url, tag)
      const res = await ctx.http.post('/v1/destinations', { name: tag, ...body })
      if (refusesType(res))
        skip(
          `the deployment has no ${type} destinations: it refused one (${res.status} ${short(res.body, 200)})`,
        )
      if (res.status >= 400 && res.status < 500 && res.status !== 429)
        fail(
          `the deployment refused a ${type} destination at the suite's receiver (${res.status} ${short(res.body, 200)}); ` +
            `the reference server needs its exact host:port in AGENTOPS_DESTINATION_PRIVATE_TARGETS=${hostAndPort(url)}`,
        )
      expectStatus(res, 201, `creating a ${type} destination`)
      const id = ownId(res.body, 'destination')
      assert(id, `the destination answer has no destination_id: ${short(res.body)}`)
      ctx.cleanup(`delete destination ${id}`, (http) => http.delete(`/v1/destinations/${id}`))
      assert(!res.text.includes(secret), 'the creation answer shows the secret')
      return { id, tag, secret }
    })()
    mine.set(slot, p)
    p.catch(() => mine.delete(slot))
  }
  return p
}

/** A pagerduty destination at the receiver for `events` (of `agentIds` only, when given), one per slot and run. */
export const pagerDestination = (ctx: CheckContext, events: string[], slot: string, agentIds?: string[]) =>
  ensureDestination(
    ctx,
    'pagerduty',
    (receiver, tag) => {
      const routingKey = randomBytes(16).toString('hex')
      return {
        type: 'pagerduty',
        events,
        ...(agentIds ? { agent_ids: agentIds } : {}),
        config: { url: `${receiver}/${tag}` },
        secrets: { routing_key: routingKey },
        secret: routingKey,
      }
    },
    slot,
  )

/**
 * A slack destination at the receiver for `events` (of `agentIds` only, when given), one per slot and run. The
 * receiver poses as Slack: the URL's last segments are the credential, as in hooks.slack.com/services/….
 */
export const slackDestination = (
  ctx: CheckContext,
  events: string[],
  slot: string,
  options: { config?: Record<string, unknown>; agentIds?: string[] } = {},
) =>
  ensureDestination(
    ctx,
    'slack',
    (receiver, tag) => {
      const token = `conf${randomBytes(12).toString('hex')}`
      return {
        type: 'slack',
        events,
        ...(options.agentIds ? { agent_ids: options.agentIds } : {}),
        config: options.config ?? {},
        secrets: { webhook_url: `${receiver}/T0CONF/B0CONF/${token}/${tag}` },
        secret: token,
      }
    },
    slot,
  )

/** Where a Slack message says it is a test send (`(test)`): in its header block, in its `text`. */
function testMarks(d: Delivery): { header: boolean; text: boolean } {
  const blocks = Array.isArray(d.body?.blocks) ? d.body.blocks.map(obj) : []
  const header = obj(obj(blocks.find((b) => b.type === 'header')).text).text
  return {
    header: typeof header === 'string' && header.includes('(test)'),
    text: typeof d.body?.text === 'string' && d.body.text.includes('(test)'),
  }
}

/** A slack destination's sender settings, which its messages carry. */
const SLACK_SENDER = { username: 'conformance-bot', icon_emoji: ':robot_face:' }

/** A pagerduty destination's own settings, which its incidents carry. */
const PAGER_SETTINGS = {
  source: 'conformance-source',
  component: 'conformance-component',
  severity: 'critical',
}

/**
 * A cloudevents destination of its own at the receiver for `kinds`, with `settings` beside its URL; one per slot
 * and run.
 */
export const cloudEventsSink = (
  ctx: CheckContext,
  slot: string,
  kinds: string[],
  settings: (tag: string) => Record<string, unknown>,
) =>
  ensureDestination(
    ctx,
    'cloudevents',
    (receiver, tag) => {
      const secret = `Bearer conf-secret-${randomBytes(12).toString('hex')}`
      return {
        type: 'cloudevents',
        events: kinds,
        config: { url: `${receiver}/${tag}`, ...settings(tag) },
        secrets: { authorization: secret },
        secret,
      }
    },
    slot,
  )

/** The cloudevents destination in binary mode, for agent.created. */
const ensureSink = (ctx: CheckContext) =>
  cloudEventsSink(ctx, 'cloudevents', ['agent.created'], () => ({ mode: 'binary' }))

/** The `source` a structured sink was created with: its own, from its tag. */
const sourceOf = (sink: Pick<Sink, 'tag'>) => `urn:agentops-conformance:${sink.tag}`

/** A cloudevents destination in structured mode with a source of its own, for `kinds`; one per slot and run. */
const structuredSink = (ctx: CheckContext, slot: string, kinds: string[]) =>
  cloudEventsSink(ctx, slot, kinds, (tag) => ({ mode: 'structured', source: sourceOf({ tag }) }))

/**
 * The destination's delivery log shows a delivery delivered at its first attempt (the answer of the service it posed
 * as counted as success), read a few times while the outcome is written; a problem sentence, or undefined.
 */
async function deliveredInLog(ctx: CheckContext, sink: Sink): Promise<string | undefined> {
  let items: Record<string, unknown>[] = []
  for (let i = 0; i < 20; i++) {
    const res = await ctx.http.get(`/v1/destinations/${sink.id}/deliveries?limit=200`)
    if (res.status !== 200) return `GET /v1/destinations/{id}/deliveries answered ${res.status}`
    items = (pageItems(res.body) ?? []).map(obj)
    if (items.some((e) => e.status === 'delivered' && e.attempts === 1)) return undefined
    await new Promise((r) => setTimeout(r, 200))
  }
  return `its delivery log shows no delivery delivered at the first attempt: ${short(items, 300)}`
}

/** No answer about the destination (its read, the list) shows its secret. */
async function secretKept(ctx: CheckContext, sink: Sink): Promise<void> {
  const read = await ctx.http.get(`/v1/destinations/${sink.id}`)
  expectStatus(read, 200, 'GET /v1/destinations/{id}')
  assert(!read.text.includes(sink.secret), 'the destination answer shows its secret')
  const list = await ctx.http.get('/v1/destinations?limit=200')
  expectStatus(list, 200, 'GET /v1/destinations')
  assert(!list.text.includes(sink.secret), 'the destination list shows a secret')
}

/** One message the suite's NATS subscriber got: its subject, headers and body. */
interface BusMessage {
  subject: string
  headers: Record<string, string>
  text: string
  body: Record<string, unknown> | undefined
}

/** A JetStream publish acknowledgement (what a stream answers a publish that expects one). */
const pubAck = (stream: string, seq: number) => JSON.stringify({ stream, seq, duplicate: false })

/**
 * The delivery log of a destination, read until `want` holds for its entries (bounded by the run's wait); the last
 * entries read.
 */
async function logUntil(
  ctx: CheckContext,
  id: string,
  want: (entries: Record<string, unknown>[]) => boolean,
): Promise<Record<string, unknown>[]> {
  let entries: Record<string, unknown>[] = []
  const deadline = Date.now() + ctx.config.waitMs
  do {
    const res = await ctx.http.get(`/v1/destinations/${id}/deliveries?limit=200`)
    expectStatus(res, 200, 'GET /v1/destinations/{id}/deliveries')
    entries = (pageItems(res.body) ?? []).map(obj)
    if (want(entries)) return entries
    await new Promise((r) => setTimeout(r, 200))
  } while (Date.now() < deadline)
  return entries
}

/**
 * A failed delivery that is retried: pending with its next attempt set, or attempted more than once already (a
 * deployment may have given up since, after the attempts it allows).
 */
function retried(entry: Record<string, unknown>): boolean {
  if (entry.status === 'delivered') return false
  return (
    (entry.status === 'pending' && typeof entry.next_attempt_at === 'string') ||
    (typeof entry.attempts === 'number' && entry.attempts > 1)
  )
}

/** What is wrong with one event's message on the bus (the reference profile's `nats` type, docs/events.md). */
function busMessageProblems(m: BusMessage, prefix: string, kind: string, stream: string): string[] {
  const problems: string[] = []
  const workspace =
    m.subject.startsWith(`${prefix}.`) && m.subject.endsWith(`.${kind}`)
      ? m.subject.slice(prefix.length + 1, -kind.length - 1)
      : ''
  if (!/^[^.*>\s]+$/.test(workspace))
    problems.push(`subject ${m.subject} is not ${prefix}.<workspace id>.${kind}`)
  if (m.body === undefined) problems.push(`the body is not a JSON object: ${short(m.text, 120)}`)
  else {
    if (m.body.event !== kind) problems.push(`its event is ${short(m.body.event)}, not ${kind}`)
    if (typeof m.body.id !== 'string' || m.body.id === '') problems.push('it has no event id')
    if ('signature' in m.body) problems.push('it carries a webhook signature (a bus message has none)')
    if (m.headers['nats-msg-id'] !== m.body.id)
      problems.push(
        `its Nats-Msg-Id header ${short(m.headers['nats-msg-id'])} is not the event id ${short(m.body.id)}`,
      )
  }
  if (!/^application\/json\b/.test(m.headers['content-type'] ?? ''))
    problems.push(`its Content-Type is ${short(m.headers['content-type'])}, not application/json`)
  if (m.headers['nats-expected-stream'] !== stream)
    problems.push(
      `it does not expect the destination's stream ${stream} (Nats-Expected-Stream ${short(m.headers['nats-expected-stream'])})`,
    )
  return problems
}

/**
 * `message` names `field` as itself, or one of its items (`config.servers.0`): not as the start of a deeper field
 * (`config.colour.size`) or of a longer name.
 */
function namesField(message: string, field: string): boolean {
  const escaped = field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return new RegExp(`(^|[^\\w.])${escaped}(?!\\w|\\.[A-Za-z_])`).test(message)
}

/** Besides the field's name, the message says something of why: a word of three letters or more. */
function givesReason(message: string, field: string): boolean {
  return /[A-Za-z]{3,}/.test(
    message
      .split(field)
      .join(' ')
      .replace(/invalid|settings|destination/gi, ' '),
  )
}

/** `url` over ftp:, a scheme no outbound call takes (the suite's receiver, so nothing else is ever named). */
const ftpOf = (url: string) => url.replace(/^https?:/, 'ftp:')

/** The host of a `host:port` (an IPv6 host keeps its brackets). */
const natsHostOnly = (hostPort: string) => hostPort.replace(/:\d+$/, '')

export const destinationChecks: Check[] = [
  {
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
  },
  {
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
          for (const p of structuredCloudEventProblems(got, sourceOf(at), about))
            problems.push(`${kind}: ${p}`)
          if (typeof about !== 'string') problems.push(`${kind}: its data has no ${field}`)
        }),
      )
      assert(problems.length === 0, problems.join('; '))
      await secretKept(ctx, sink)
    },
  },
  {
    id: 'destinations.slack-incoming-webhook',
    title:
      'A slack destination posts each event it lists once, as a Slack incoming-webhook message (JSON with a text or Block Kit blocks of documented types within their limits) naming the run and its agent, any run input it shows escaped as Slack requires (never a ping, mention or link), logged delivered once Slack answered 200; a test send says "(test)" in its header and its text, a real event neither; its webhook URL is never answered',
    level: 'profile',
    clauses: ['S6.5'],
    async run(ctx) {
      // The profile's sender settings, which each message carries as Slack's incoming webhooks take them.
      const hook = await slackDestination(ctx, ['run.awaiting_approval'], 'slack', { config: SLACK_SENDER })
      const since = Date.now()
      // Its input carries Slack markup: a message that shows it must escape it.
      const { runId, agentId } = await ctx.fx.awaitingRun({ note: SLACK_MARKUP_NOTE })
      const forRun = (d: Delivery) => atTag(hook.tag)(d) && d.raw.includes(runId)
      const got = await ctx.receiver!.waitFor(forRun, ctx.config.waitMs)
      if (!got) {
        // A message that names no run at all is judged as it is: a missing run is one problem among its others.
        const other = ctx.receiver!.deliveries.find((d) => atTag(hook.tag)(d) && d.receivedAt >= since)
        fail(
          other
            ? `the Slack messages since run ${runId} awaited approval name no run ${runId}: ${[...slackMessageProblems(other), short(other.raw, 300)].join('; ')}`
            : `no Slack message about run ${runId}'s run.awaiting_approval reached the receiver within ${ctx.config.waitMs} ms`,
        )
      }
      const problems = [...slackMessageProblems(got), ...slackEscapingProblems(got, SLACK_MARKUP_NOTE)]
      for (const [k, v] of Object.entries(SLACK_SENDER))
        if (got.body?.[k] !== v)
          problems.push(`its ${k} is ${short(got.body?.[k])}, not the destination's ${v}`)
      // Buttons only where approval_buttons asked for them (and a signing secret checks their clicks): none here.
      const blocks = Array.isArray(got.body?.blocks) ? got.body.blocks.map(obj) : []
      if (blocks.some((b) => b.type === 'actions'))
        problems.push('it carries action buttons, though the destination has no approval_buttons')
      if (!got.raw.includes(agentId)) problems.push(`the message does not name the run's agent ${agentId}`)
      const marks = testMarks(got)
      if (marks.header || marks.text) problems.push('it says "(test)", though its event is real')
      const copies = ctx.receiver!.deliveries.filter((d) => forRun(d) && d.status < 300).length
      if (copies > 1) problems.push(`the message arrived ${copies} times`)
      const logged = await deliveredInLog(ctx, hook)
      if (logged) problems.push(logged)
      assert(problems.length === 0, `the Slack message about run ${runId}: ${problems.join('; ')}`)
      // A test send (the profile's POST /v1/destinations/{id}/test) says it is one where a person reads it.
      const testSent = Date.now()
      expectStatus(
        await ctx.http.post(`/v1/destinations/${hook.id}/test`, {}),
        200,
        'a test send to the slack destination',
      )
      const test = await ctx.receiver!.waitFor(
        (d) => atTag(hook.tag)(d) && d.receivedAt >= testSent && testMarks(d).header,
        ctx.config.waitMs,
      )
      assert(test, 'no Slack message whose header says "(test)" arrived after a test send')
      assert(testMarks(test).text, `the test send's text does not say "(test)": ${short(test.body?.text)}`)
      await secretKept(ctx, hook)
    },
  },
  {
    id: 'destinations.pagerduty-events-v2',
    title:
      "A pagerduty destination triggers an Events API v2 incident for a run that awaits approval (its routing_key, a summary, the source, component and severity it was configured with, a dedup_key) and resolves that dedup_key once the step is approved, logged delivered once answered 2xx; a run whose step is rejected is an incident of its own, resolved once the run fails (failures not listed); approving the first of two approval steps resolves before the second pages again; two runs of one agent paged at their start are two incidents, each resolved once its run succeeds; a change to another severity is the next incident's (a sample whose kind's own default is another); two samples of one agent are one incident; a new routing key alone is checked and taken; its routing key is never answered",
    level: 'profile',
    clauses: ['S6.5'],
    async run(ctx) {
      const pager = await ensureDestination(ctx, 'pagerduty', (receiver, tag) => {
        const routingKey = randomBytes(16).toString('hex')
        return {
          type: 'pagerduty',
          events: ['run.awaiting_approval'],
          // The profile's settings of an incident: its source, component and severity (critical, not the
          // warning an approval gets by default).
          config: { url: `${receiver}/${tag}`, ...PAGER_SETTINGS },
          secrets: { routing_key: routingKey },
          secret: routingKey,
        }
      })
      const { runId } = await decided(ctx, 'approve')
      const trigger = await ctx.receiver!.waitFor(pagerTrigger(pager.tag, runId), ctx.config.waitMs)
      if (!trigger)
        fail(
          `no Events API v2 trigger naming run ${runId} reached the receiver within ${ctx.config.waitMs} ms`,
        )
      const problems = pagerDutyEventProblems(trigger, pager.secret)
      const payload = obj(trigger.body?.payload)
      for (const [k, v] of Object.entries(PAGER_SETTINGS))
        if (payload[k] !== v)
          problems.push(`payload.${k} is ${short(payload[k])}, not the destination's ${v}`)
      assert(problems.length === 0, `the trigger for run ${runId}: ${problems.join('; ')}`)
      const key = trigger.body?.dedup_key
      assert(
        typeof key === 'string',
        `the trigger for run ${runId} has no dedup_key: an approval cannot resolve it`,
      )
      const resolve = await ctx.receiver!.waitFor(pagerResolve(pager.tag, key), ctx.config.waitMs)
      if (!resolve)
        fail(
          `run ${runId}'s step was approved, but no resolve with the trigger's dedup_key ${key} reached the receiver within ${ctx.config.waitMs} ms`,
        )
      const resolveProblems = pagerDutyEventProblems(resolve, pager.secret)
      const logged = await deliveredInLog(ctx, pager)
      if (logged) resolveProblems.push(logged)
      assert(resolveProblems.length === 0, `the resolve for run ${runId}: ${resolveProblems.join('; ')}`)
      // A rejected step fails its run, which is not paged here (run.failed is not listed): that ends the run's
      // incident too. Each run is an incident of its own, whatever agent runs it.
      const rejected = await decided(ctx, 'reject')
      const rejectedTrigger = await ctx.receiver!.waitFor(
        pagerTrigger(pager.tag, rejected.runId),
        ctx.config.waitMs,
      )
      if (!rejectedTrigger)
        fail(
          `no Events API v2 trigger naming run ${rejected.runId} reached the receiver within ${ctx.config.waitMs} ms`,
        )
      const rejectedKey = rejectedTrigger.body?.dedup_key
      assert(
        typeof rejectedKey === 'string' && rejectedKey !== key,
        `the triggers of runs ${runId} and ${rejected.runId} share dedup_key ${short(key)}: two runs are one incident`,
      )
      const ended = await ctx.receiver!.waitFor(pagerResolve(pager.tag, rejectedKey), ctx.config.waitMs)
      if (!ended)
        fail(
          `run ${rejected.runId}'s step was rejected and the run failed, but no resolve with its dedup_key ${rejectedKey} reached the receiver within ${ctx.config.waitMs} ms`,
        )
      // A run of two approval steps: approving the first ends the incident (a resolve before the second step's
      // trigger opens it again), although the run has not ended.
      const ok = await ctx.fx.tool('succeed')
      const twoSteps = await ctx.fx.startRun(
        await ctx.fx.newToolAgent([ok, ok], ctx.config.profile.approvalBehavior),
      )
      const firstWait = await ctx.fx.waitForStatus(
        twoSteps.runId,
        (s) => s === 'awaiting_approval',
        'awaiting approval',
      )
      const firstStep = firstAwaitingStep(firstWait)
      const firstTrigger = await ctx.receiver!.waitFor(
        pagerTrigger(pager.tag, twoSteps.runId),
        ctx.config.waitMs,
      )
      if (!firstTrigger)
        fail(`no trigger naming run ${twoSteps.runId} reached the receiver within ${ctx.config.waitMs} ms`)
      expectStatus(
        await decideStep(ctx, twoSteps.runId, firstStep, 'approve'),
        200,
        `approving step ${firstStep}`,
      )
      const secondWait = await ctx.fx.awaitingAnotherStep(
        twoSteps.runId,
        [firstStep],
        'past its first approval',
      )
      if (secondWait.status === 'awaiting_approval') {
        const secondStep = firstAwaitingStep(secondWait)
        const secondTrigger = await ctx.receiver!.waitFor(
          pagerTrigger(pager.tag, twoSteps.runId, secondStep),
          ctx.config.waitMs,
        )
        if (!secondTrigger)
          fail(
            `no trigger for step ${secondStep} of run ${twoSteps.runId} reached the receiver within ${ctx.config.waitMs} ms`,
          )
        const between = ctx.receiver!.deliveries.filter(
          (d) =>
            pagerResolve(pager.tag, firstTrigger.body?.dedup_key)(d) &&
            d.receivedAt >= firstTrigger.receivedAt &&
            d.receivedAt <= secondTrigger.receivedAt,
        )
        assert(
          between.length > 0,
          `step ${firstStep} of run ${twoSteps.runId} was approved, but its incident was not resolved before step ${secondStep}'s trigger`,
        )
        expectStatus(
          await decideStep(ctx, twoSteps.runId, secondStep, 'approve'),
          200,
          `approving step ${secondStep}`,
        )
      } else ctx.partial(`run ${twoSteps.runId} of two approval steps awaited one approval only`)
      // A run paged at its start that then succeeds on its own: its success ends the incident.
      const agent = await ctx.fx.newToolAgent([ok])
      // Paging for this agent alone, so it stays quiet for the rest of the suite run.
      const atStart = await pagerDestination(ctx, ['run.started'], 'pagerduty-started', [agent.id])
      // Two runs of one agent: two incidents, each resolved once its run succeeds.
      const keys = new Set<unknown>()
      for (const quick of [await ctx.fx.startRun(agent), await ctx.fx.startRun(agent)]) {
        const paged = await ctx.receiver!.waitFor(pagerTrigger(atStart.tag, quick.runId), ctx.config.waitMs)
        if (!paged)
          fail(
            `a pagerduty destination listing run.started opened no incident for run ${quick.runId} within ${ctx.config.waitMs} ms`,
          )
        keys.add(paged.body?.dedup_key)
        const settled = await ctx.fx.waitForStatus(quick.runId, (s) => ctx.fx.statuses.terminal(s), 'ended')
        const closed = await ctx.receiver!.waitFor(
          pagerResolve(atStart.tag, paged.body?.dedup_key),
          ctx.config.waitMs,
        )
        assert(
          closed,
          `run ${quick.runId} ${String(settled.status)}, but the incident its start opened was not resolved within ${ctx.config.waitMs} ms`,
        )
      }
      assert(
        keys.size === 2,
        `two runs of agent ${agent.id} paged with one dedup_key ${short([...keys][0])}: one incident for two runs`,
      )
      // Each severity PagerDuty takes, set by a change of the destination, is the next incident's (its sample,
      // which is sent at once and answered with what the receiver said). The sample is of a kind whose own default
      // severity is another (an approval's is warning, an agent's creation info; both page, one listed and one not
      // about a run), so only the setting can give it.
      const base = `/v1/destinations/${pager.id}`
      /**
       * Sends a sample of `event` and answers the triggers at the destination's receiver between the send and its
       * answer (the sample arrives before the answer; the destination pages every run of the workspace that awaits
       * approval, so other checks' triggers may arrive alongside).
       */
      const sampleTriggers = async (event: string, what: string) => {
        const since = Date.now()
        const sample = await ctx.http.post(`${base}/test`, { event })
        const answered = Date.now()
        expectStatus(sample, 200, `POST /v1/destinations/{id}/test ${what}`)
        const sent = ctx.receiver!.deliveries.filter(
          (d) => pagerTrigger(pager.tag)(d) && d.receivedAt >= since && d.receivedAt <= answered,
        )
        return { sample, sent }
      }
      const agentKeys = new Set<unknown>()
      for (const severity of PAGERDUTY_SEVERITIES.filter((s) => s !== PAGER_SETTINGS.severity)) {
        const event = severity === 'info' ? 'run.awaiting_approval' : 'agent.created'
        const config = { url: `${receiverUrl(ctx)}/${pager.tag}`, ...PAGER_SETTINGS, severity }
        expectStatus(
          await ctx.http.patch(base, { config }),
          200,
          `PATCH /v1/destinations/{id} to severity ${severity}`,
        )
        // The sample is one of the triggers of that moment (the approval's own left out), whichever came last.
        const { sample, sent: triggers } = await sampleTriggers(event, `at severity ${severity}`)
        const sent = triggers.filter((d) => d.body?.dedup_key !== key)
        assert(
          sent.length > 0,
          `the sample at severity ${severity} reached no receiver: ${short(sample.body)}`,
        )
        const got = sent.map((d) => obj(d.body?.payload).severity)
        assert(
          got.includes(severity),
          `with severity ${severity} configured, the ${event} sample's payload.severity is ${short(got.at(-1))}`,
        )
        for (const d of sent)
          if (obj(d.body?.payload).class === 'agent.created') agentKeys.add(d.body?.dedup_key)
      }
      // The agent.created samples name one made-up agent: one incident per agent, as per run.
      assert(
        agentKeys.size === 1,
        `two agent.created samples of one agent were paged with dedup_keys ${short([...agentKeys])}, not one incident`,
      )
      // A change of the secrets alone is checked and taken as at creation: a routing key of the wrong form is
      // refused naming it, and the next incident carries a new one.
      const refused = await ctx.http.patch(base, { secrets: { routing_key: 'short' } })
      assert(
        refused.status === 400 &&
          JSON.stringify(obj(obj(obj(refused.body).error).detail).fields).includes('secrets.routing_key'),
        `PATCH /v1/destinations/{id} with a 5-character routing key alone answered ${refused.status} ${short(refused.body)}, not 400 naming secrets.routing_key`,
      )
      const rotated = randomBytes(16).toString('hex')
      expectStatus(
        await ctx.http.patch(base, { secrets: { routing_key: rotated } }),
        200,
        'PATCH /v1/destinations/{id} with a new routing key alone',
      )
      const { sent: afterRotation } = await sampleTriggers('agent.created', 'after a new routing key')
      const carried = afterRotation
        .filter((d) => obj(d.body?.payload).class === 'agent.created')
        .map((d) => d.body?.routing_key)
      assert(
        carried.includes(rotated),
        `after PATCH /v1/destinations/{id} with a new routing key alone, the sample carried ${short(carried)}`,
      )
      const config = { url: `${receiverUrl(ctx)}/${pager.tag}`, ...PAGER_SETTINGS }
      expectStatus(
        await ctx.http.patch(base, { config, secrets: { routing_key: pager.secret } }),
        200,
        'PATCH /v1/destinations/{id} back',
      )
      await secretKept(ctx, pager)
    },
  },
  {
    id: 'destinations.operations',
    title:
      'The destination operations answer as documented: list, read, change, test, delivery log, redelivery (409 while an attempt is in progress), delete (then its read, its log and a second delete are 404); bad input (a url at a private or metadata address included) is 400, an unknown id 404, a creation key reused with another body 409',
    level: 'profile',
    clauses: ['S6.5', 'S7.3', 'S7.6', 'S7.7'],
    async run(ctx) {
      const sink = await ensureSink(ctx)
      await ctx.fx.newAgent()
      await ctx.receiver!.waitFor(atTag(sink.tag), ctx.config.waitMs)
      let deliveryId: unknown
      let eventId: unknown
      for (let i = 0; i < 20 && deliveryId === undefined; i++) {
        const log = await ctx.http.get(`/v1/destinations/${sink.id}/deliveries`)
        expectStatus(log, 200, 'GET /v1/destinations/{id}/deliveries')
        const first = obj(pageItems(log.body)?.[0])
        deliveryId = first.delivery_id
        eventId = first.event_id
        if (deliveryId === undefined) await new Promise((r) => setTimeout(r, 100))
      }
      assert(typeof deliveryId === 'string', `the delivery log of ${sink.id} lists no delivery`)
      const base = `/v1/destinations/${sink.id}`
      const key = (k: string) => ({
        headers: { 'idempotency-key': `conf-${k}-${randomBytes(9).toString('hex')}` },
      })
      const createKey = key('dst')
      const bad = (change: Record<string, unknown>) => () =>
        ctx.http.post('/v1/destinations', {
          type: 'cloudevents',
          name: 'bad',
          events: ['run.failed'],
          config: { url: unwantedHookUrl(ctx) },
          ...change,
        })
      const listed = (res: HttpResponse) =>
        (pageItems(res.body) ?? []).some((d) => ownId(d, 'destination') === sink.id)
          ? undefined
          : `${sink.id} is not listed`
      const probes: Probe[] = [
        {
          what: 'GET /v1/destinations',
          expect: 200,
          send: () => ctx.http.get('/v1/destinations?limit=200'),
          judge: listed,
        },
        {
          what: 'POST /v1/destinations with an unknown type',
          expect: 400,
          send: bad({ type: 'carrier-pigeon' }),
        },
        {
          what: 'POST /v1/destinations with an unknown event kind',
          expect: 400,
          send: bad({ events: ['run.exploded'] }),
        },
        {
          what: 'POST /v1/destinations with a malformed URL',
          expect: 400,
          send: bad({ config: { url: 'http//x' } }),
        },
        {
          what: 'POST /v1/destinations with a url at a private address',
          expect: 400,
          send: bad({ config: { url: 'https://10.0.0.1/sink' } }),
        },
        {
          what: 'POST /v1/destinations with a url at the cloud metadata address',
          expect: 400,
          send: bad({ config: { url: 'http://169.254.169.254/latest/meta-data' } }),
        },
        {
          what: 'PATCH /v1/destinations/{id}',
          expect: 200,
          send: () => ctx.http.patch(base, { name: `${sink.tag}-renamed` }),
          judge: (res) => (obj(res.body).name === `${sink.tag}-renamed` ? undefined : short(res.body)),
        },
        {
          what: 'PATCH /v1/destinations/{unknown id}',
          expect: 404,
          send: () => ctx.http.patch('/v1/destinations/conf-unknown-destination', { name: 'x' }),
        },
        {
          what: 'POST /v1/destinations/{id}/test',
          expect: 200,
          send: () => ctx.http.post(`${base}/test`, {}),
          judge: (res) =>
            obj(res.body).ok === true ? undefined : `the sample was not delivered: ${short(res.body)}`,
        },
        {
          what: 'POST /v1/destinations/{id}/deliveries/{delivery_id}/redeliver',
          expect: 202,
          send: () => ctx.http.post(`${base}/deliveries/${deliveryId}/redeliver`),
        },
        {
          what: 'POST …/redeliver while an attempt of it is in progress',
          expect: 409,
          send: () =>
            redeliverDuringAttempt(
              ctx,
              { deliveryId: String(deliveryId), eventId, tag: sink.tag },
              `${base}/deliveries/${deliveryId}/redeliver`,
            ),
          judge: refusedRedelivery,
        },
        redeliverUnknown(ctx, base, '/v1/destinations/{id}'),
      ]
      const wrong = await runProbes(probes)
      // A POST repeated under its key with another body is 409, as every POST's.
      const keyed = {
        type: 'cloudevents',
        name: 'k',
        events: ['tool.retired'],
        config: { url: `${receiverUrl(ctx)}/${sink.tag}-k` },
      }
      const first = await ctx.http.post('/v1/destinations', keyed, createKey)
      if (first.status !== 201)
        wrong.push(`POST /v1/destinations under a key answered ${first.status}, not 201`)
      else {
        const id = ownId(first.body, 'destination')
        if (id) ctx.cleanup(`delete destination ${id}`, (http) => http.delete(`/v1/destinations/${id}`))
        const again = await ctx.http.post('/v1/destinations', { ...keyed, name: 'other' }, createKey)
        if (again.status !== 409)
          wrong.push(`the same creation key with another body answered ${again.status}, not 409`)
        // A deleted destination is gone, as a deleted webhook is: its read, its log and a second delete are 404.
        if (id)
          wrong.push(
            ...(await runProbes(
              deletedThenGoneProbes(ctx, '/v1/destinations/{id}', `/v1/destinations/${id}`),
            )),
          )
      }
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
  {
    id: 'destinations.settings-judged',
    title:
      "A destination's settings are judged by its type as documented: a creation without events gets the type's default kinds; a config read back with its documented defaults (CloudEvents' binary mode, NATS' agentops subject prefix); a config or secrets of the wrong shape (an unknown field, a routing key that is not 32 letters and digits, a severity or CloudEvents mode outside its list, a Slack icon_emoji that is not one :name:, approval buttons without a signing secret, no NATS server or more than ten, one that is not nats://host:port, carries credentials or names an unlisted private port, an endpoint or incoming webhook that is not http(s), a subject prefix that is not dot-separated tokens, a stream name that is not one token, a NATS user without a password) is 400 naming the field in detail.fields and the message, which says why, never quoting a secret; settings at the edge of each rule are taken as sent (tls:// and bare host:port NATS servers read back as URLs)",
    level: 'profile',
    clauses: ['S6.5', 'S7.3'],
    async run(ctx) {
      await skipWithoutDestinations(ctx)
      const url = `${receiverUrl(ctx)}/${ctx.name('settings')}`
      const routingKey = randomBytes(16).toString('hex')
      // Each type as the contract's DestinationType documents its config and secrets (and no events).
      const types: Record<string, Record<string, unknown>> = {
        cloudevents: { config: { url } },
        slack: { secrets: { webhook_url: url } },
        pagerduty: { config: { url }, secrets: { routing_key: routingKey } },
      }
      const declared = ctx.config.natsUrl
      const nats = declared ? natsTarget(declared) : undefined
      if (nats) types.nats = { config: { servers: [`nats://${nats.hostPort}`] } }
      else
        ctx.partial(
          `the NATS settings part did not run: no NATS server declared (${settingName('nats-url')}) for a nats destination the deployment may reach`,
        )
      const wrong: string[] = []
      /** Creates a destination (or is refused); one created is deleted at the end of the run whatever happens. */
      const create = async (destination: Record<string, unknown>) => {
        const res = await ctx.http.post('/v1/destinations', destination)
        const id = ownId(res.body, 'destination')
        if (id) ctx.cleanup(`delete destination ${id}`, (http) => http.delete(`/v1/destinations/${id}`))
        return { res, id }
      }
      // The documented defaults: run.failed, policy.denied and run.awaiting_approval for slack and pagerduty, every
      // kind for cloudevents and nats.
      const alerting = ['policy.denied', 'run.awaiting_approval', 'run.failed']
      // Each config read back: the documented defaults filled in (CloudEvents' binary mode, NATS' subject prefix).
      const defaults: Record<string, (config: Record<string, unknown>) => boolean> = {
        cloudevents: (c) => c.mode === 'binary',
        nats: (c) => c.subject_prefix === 'agentops',
      }
      for (const [type, settings] of Object.entries(types)) {
        const { res, id } = await create({ type, name: `${type} defaults`, ...settings })
        if (res.status !== 201) {
          wrong.push(`a ${type} destination without events answered ${res.status}: ${short(res.body)}`)
          continue
        }
        const got = (Array.isArray(obj(res.body).events) ? (obj(res.body).events as unknown[]) : []).map(
          String,
        )
        const want = type === 'slack' || type === 'pagerduty' ? alerting : contractEventKinds(ctx)
        if (!sameJson([...got].sort(), [...want].sort()))
          wrong.push(`a ${type} destination without events got ${short(got)}, not ${short(want)}`)
        const config = obj(obj(res.body).config)
        if (defaults[type] && !defaults[type](config))
          wrong.push(
            `a ${type} destination without those settings reads back config ${short(config)}, without its documented defaults`,
          )
        if (id) await ctx.http.delete(`/v1/destinations/${id}`)
      }
      // Settings of the wrong shape: 400 invalid_request, detail.fields naming the field, no secret in the answer.
      const secret = 'conf-not-a-routing-key'
      const refused: [string, Record<string, unknown>, string][] = [
        ['an unknown config field', { type: 'cloudevents', config: { url, colour: 'red' } }, 'config.colour'],
        [
          'two unknown config fields',
          { type: 'cloudevents', config: { url, colour: 'red', size: 'large' } },
          'config.colour',
        ],
        [
          'a routing key that is not 32 characters',
          { type: 'pagerduty', config: { url }, secrets: { routing_key: secret } },
          'secrets.routing_key',
        ],
        [
          'approval buttons without a signing secret',
          { type: 'slack', config: { approval_buttons: true }, secrets: { webhook_url: url } },
          'secrets.signing_secret',
        ],
        // A pattern holds over the whole value, not only a part of it.
        [
          'a routing key of 32 letters and digits after another character',
          { type: 'pagerduty', config: { url }, secrets: { routing_key: `-${routingKey}` } },
          'secrets.routing_key',
        ],
        [
          'a routing key of 32 letters and digits before another character',
          { type: 'pagerduty', config: { url }, secrets: { routing_key: `${routingKey}-` } },
          'secrets.routing_key',
        ],
        [
          'a severity outside critical, error, warning and info',
          { type: 'pagerduty', config: { url, severity: 'loud' }, secrets: { routing_key: routingKey } },
          'config.severity',
        ],
        // Every URL the outbound port would call is judged at creation: absolute http(s) only.
        [
          'a PagerDuty endpoint over ftp://',
          { type: 'pagerduty', config: { url: ftpOf(url) }, secrets: { routing_key: routingKey } },
          'config.url',
        ],
        [
          'a Slack incoming webhook over ftp://',
          { type: 'slack', secrets: { webhook_url: ftpOf(url) } },
          'secrets.webhook_url',
        ],
        [
          'a CloudEvents mode outside binary and structured',
          { type: 'cloudevents', config: { url, mode: 'batched' } },
          'config.mode',
        ],
        [
          'a Slack icon_emoji with text before it',
          { type: 'slack', config: { icon_emoji: 'x:robot_face:' }, secrets: { webhook_url: url } },
          'config.icon_emoji',
        ],
        [
          'a Slack icon_emoji with text after it',
          { type: 'slack', config: { icon_emoji: ':robot_face:x' }, secrets: { webhook_url: url } },
          'config.icon_emoji',
        ],
      ]
      if (nats) {
        const servers = (server: string) => ({ type: 'nats', config: { servers: [server] } })
        refused.push(
          ['a NATS server over http://', servers(`http://${nats.hostPort}`), 'config.servers'],
          ['a NATS server with credentials', servers(`nats://u:p@${nats.hostPort}`), 'config.servers'],
          ['a NATS server with a user name', servers(`nats://u@${nats.hostPort}`), 'config.servers'],
          ['a NATS server with a password', servers(`nats://:p@${nats.hostPort}`), 'config.servers'],
          ['a NATS server with no host', servers('nats:///'), 'config.servers'],
          // The same host on a port no one allowed: private addresses are refused unless listed, as for HTTP.
          [
            'a NATS server at an unlisted private port',
            servers(`nats://${natsHostOnly(nats.hostPort)}:1`),
            'config.servers',
          ],
          ['a NATS server that is a number', { type: 'nats', config: { servers: [4222] } }, 'config.servers'],
          ['a NATS server with a path', servers(`nats://${nats.hostPort}/bus`), 'config.servers'],
          ['a NATS server with a query', servers(`nats://${nats.hostPort}?q=1`), 'config.servers'],
          ['a NATS server that is no URL', servers('nats://[bus'), 'config.servers'],
          [
            'a NATS user without a password',
            { ...servers(`nats://${nats.hostPort}`), secrets: { user: 'conf-user' } },
            'secrets.password',
          ],
          ['no NATS server', { type: 'nats', config: { servers: [] } }, 'config.servers'],
          [
            'eleven NATS servers',
            { type: 'nats', config: { servers: Array(11).fill(`nats://${nats.hostPort}`) } },
            'config.servers',
          ],
        )
        // No port: NATS' own (4222), at the declared server's private host an unlisted port unless it is that one.
        if (!nats.hostPort.endsWith(':4222'))
          refused.push([
            'a NATS server with no port, at a private address',
            servers(`nats://${natsHostOnly(nats.hostPort)}`),
            'config.servers',
          ])
        const natsConfig = (config: Record<string, unknown>) => ({
          type: 'nats',
          config: { servers: [`nats://${nats.hostPort}`], ...config },
        })
        for (const [what, config, field] of [
          ['a subject prefix ending in a dot', { subject_prefix: 'agentops.' }, 'config.subject_prefix'],
          ['a subject prefix starting with a dot', { subject_prefix: '.agentops' }, 'config.subject_prefix'],
          ['a subject prefix with an empty token', { subject_prefix: 'agent..ops' }, 'config.subject_prefix'],
          ['a stream name after a space', { stream: ' EVENTS' }, 'config.stream'],
          ['a stream name before a space', { stream: 'EVENTS ' }, 'config.stream'],
        ] as const)
          refused.push([what, natsConfig(config), field])
      }
      for (const [what, body, field] of refused) {
        const { res } = await create({ name: 'refused', events: ['run.failed'], ...body })
        const error = obj(obj(res.body).error)
        const fields = obj(error.detail).fields
        if (res.status !== 400 || error.code !== 'invalid_request')
          wrong.push(
            `${what} answered ${res.status} ${short(error.code ?? res.body)}, not 400 invalid_request`,
          )
        else if (!Array.isArray(fields) || !fields.includes(field))
          wrong.push(`${what}: detail.fields is ${short(fields)}, not naming ${field}`)
        else if (typeof error.message !== 'string' || !namesField(error.message, field))
          wrong.push(
            `${what}: error.message ${short(error.message)} does not name ${field} (as itself, not a deeper path)`,
          )
        else if (!givesReason(error.message, field))
          wrong.push(`${what}: error.message ${short(error.message)} names ${field} but says nothing of why`)
        if (res.text.includes(secret)) wrong.push(`${what}: the answer quotes the secret`)
      }
      // Settings at the edge of each rule are taken as sent.
      const taken: [string, Record<string, unknown>, Record<string, unknown>][] = [
        [
          'a Slack icon_emoji, with approval buttons and their signing secret',
          {
            type: 'slack',
            config: { icon_emoji: ':robot_face:', approval_buttons: true },
            secrets: { webhook_url: url, signing_secret: 'conf-signing-secret' },
          },
          { icon_emoji: ':robot_face:', approval_buttons: true },
        ],
      ]
      if (nats) {
        const servers = [`nats://${nats.hostPort}`, `nats://${nats.hostPort}`]
        taken.push(
          [
            'two NATS servers and a stream',
            { type: 'nats', config: { servers, stream: 'CONF_EVENTS' } },
            { servers, stream: 'CONF_EVENTS' },
          ],
          // tls:// is the other scheme NATS clients dial; a bare host:port gets nats://, a trailing slash is no path.
          [
            'a NATS server over tls://, one without a scheme and one with a trailing slash',
            {
              type: 'nats',
              config: { servers: [`tls://${nats.hostPort}`, nats.hostPort, `nats://${nats.hostPort}/`] },
            },
            {
              servers: [`tls://${nats.hostPort}`, `nats://${nats.hostPort}`, `nats://${nats.hostPort}`],
            },
          ],
          [
            'a subject prefix of several tokens, and a user with a password',
            {
              type: 'nats',
              config: { servers: servers.slice(1), subject_prefix: 'acme-prod.agent_ops.v2' },
              secrets: { user: 'conf-user', password: 'conf-password' },
            },
            { subject_prefix: 'acme-prod.agent_ops.v2' },
          ],
        )
      }
      for (const [what, body, want] of taken) {
        const { res, id } = await create({ name: 'taken', events: ['run.failed'], ...body })
        const config = obj(obj(res.body).config)
        if (res.status !== 201) wrong.push(`${what} answered ${res.status}, not 201: ${short(res.body)}`)
        else if (Object.entries(want).some(([k, v]) => !sameJson(config[k], v)))
          wrong.push(`${what} reads back config ${short(config)}, not ${short(want)}`)
        if (id) await ctx.http.delete(`/v1/destinations/${id}`)
      }
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
  {
    id: 'destinations.event-bus',
    title:
      'A nats destination publishes each event it lists once to <subject_prefix>.<workspace id>.<kind>, the webhook body without a signature, Nats-Msg-Id the event id, Content-Type application/json, expecting its stream, logged delivered (200) at the first attempt once acknowledged; where nothing listens, each attempt is logged 503 "no responders" and retried; a publish JetStream refuses is logged with its reason and retried; its credential is never answered',
    level: 'profile',
    clauses: ['S6.5'],
    // It waits for a second publish that must not come, on subjects and destinations of its own.
    overlap: true,
    async run(ctx) {
      const declared = ctx.config.natsUrl
      if (!declared)
        skip(
          `no NATS server declared (${settingName('nats-url')}): the event-bus destination needs one the suite can subscribe at`,
        )
      const target = natsTarget(declared)
      await skipWithoutDestinations(ctx)
      const { connect } = await import('@nats-io/transport-node')
      const nc = await connect({
        servers: target.server,
        name: 'agentops-conformance',
        timeout: ctx.config.timeoutMs,
        ...(target.token ? { token: target.token } : {}),
        ...(target.user ? { user: target.user, pass: target.password ?? '' } : {}),
      }).catch((err: unknown) =>
        fail(
          `the suite cannot connect to the declared NATS server ${target.server}: ${(err as Error).message}`,
        ),
      )
      const created: string[] = []
      try {
        const tag = ctx.name('bus')
        // The stream the destination names: the suite answers its publishes' acknowledgements as JetStream would.
        const stream = `CONF_${randomBytes(6).toString('hex')}`
        const got: BusMessage[] = []
        let seq = 0
        const sub = nc.subscribe(`${tag}.>`, {
          callback: (_err, m) => {
            const headers: Record<string, string> = {}
            for (const [k, v] of m.headers ?? []) headers[k.toLowerCase()] = v.join(', ')
            const text = m.string()
            let body: Record<string, unknown> | undefined
            try {
              const parsed: unknown = JSON.parse(text)
              body =
                parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
                  ? obj(parsed)
                  : undefined
            } catch {
              body = undefined
            }
            got.push({ subject: m.subject, headers, text, body })
            if (m.reply) m.respond(pubAck(stream, ++seq))
          },
        })
        // A stream that refuses: JetStream's own error for a publish its stream does not take.
        const REFUSAL = 'expected stream does not match'
        const refusing = nc.subscribe(`${tag}_refused.>`, {
          callback: (_err, m) => {
            if (m.reply)
              m.respond(JSON.stringify({ error: { code: 400, err_code: 10060, description: REFUSAL } }))
          },
        })
        await nc.flush()
        const secret = target.token ?? target.password
        const create = async (prefix: string, withStream: boolean) => {
          const res = await ctx.http.post('/v1/destinations', {
            name: prefix,
            type: 'nats',
            events: ['agent.created'],
            config: { servers: [target.server], subject_prefix: prefix, ...(withStream ? { stream } : {}) },
            secrets: target.token
              ? { token: target.token }
              : target.user
                ? { user: target.user, password: target.password ?? '' }
                : {},
          })
          if (refusesType(res))
            skip(
              `the deployment has no nats destinations: it refused one (${res.status} ${short(res.body, 200)})`,
            )
          if (res.status >= 400 && res.status < 500 && res.status !== 429)
            fail(
              `the deployment refused a nats destination at the declared NATS server (${res.status} ${short(res.body, 200)}); ` +
                `the reference server needs its host:port in AGENTOPS_DESTINATION_PRIVATE_TARGETS=${target.hostPort}`,
            )
          expectStatus(res, 201, 'creating a nats destination')
          const id = ownId(res.body, 'destination')
          assert(id, `the destination answer has no destination_id: ${short(res.body)}`)
          created.push(id)
          if (secret)
            assert(!res.text.includes(secret), "the creation answer shows the NATS server's credential")
          return id
        }
        const busId = await create(tag, true)
        // A prefix nothing subscribes to: NATS answers each publish "no responders".
        const voidId = await create(`${tag}_void`, false)
        const refusedId = await create(`${tag}_refused`, true)
        const agents = [await ctx.fx.newAgent(), await ctx.fx.newAgent()]
        const problems: string[] = []
        const ids: unknown[] = []
        // One wait for both: a deployment that publishes nothing costs the run one wait, not two.
        const deadline = Date.now() + ctx.config.waitMs
        for (const agent of agents) {
          let m = got.find((x) => x.body?.agent_id === agent)
          while (!m && Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, 50))
            m = got.find((x) => x.body?.agent_id === agent)
          }
          if (!m) {
            problems.push(
              `no message about agent ${agent}'s agent.created arrived under ${tag}.> within ${ctx.config.waitMs} ms (${got.length} others did: ${short(
                got.map((x) => x.subject),
                200,
              )})`,
            )
            continue
          }
          ids.push(m.body?.id)
          for (const p of busMessageProblems(m, tag, 'agent.created', stream))
            problems.push(`agent ${agent}'s message: ${p}`)
        }
        assert(problems.length === 0, problems.join('; '))
        const workspaces = new Set(got.map((m) => m.subject.slice(tag.length + 1).split('.')[0]))
        assert(
          workspaces.size === 1,
          `one workspace's events came under ${workspaces.size} workspace subjects: ${short([...workspaces])}`,
        )
        assert(ids[0] !== ids[1], `both agents' events carry the same id ${short(ids[0])}`)
        const log = await logUntil(ctx, busId, (entries) =>
          ids.every((id) => entries.some((e) => e.event_id === id && e.status === 'delivered')),
        )
        for (const id of ids) {
          const entry = log.find((e) => e.event_id === id)
          if (!entry) problems.push(`the delivery log lists no delivery of event ${short(id)}`)
          else if (entry.status !== 'delivered' || entry.attempts !== 1 || entry.last_status_code !== 200)
            problems.push(
              `event ${short(id)}'s delivery is logged ${short(entry.status)} after ${short(entry.attempts)} attempts with status ${short(entry.last_status_code)}, not delivered at the first with 200`,
            )
        }
        // Acknowledged once, published once: no message of either event comes again.
        await new Promise((r) => setTimeout(r, 500))
        for (const id of ids) {
          const copies = got.filter((m) => m.body?.id === id).length
          if (copies !== 1) problems.push(`event ${short(id)} was published ${copies} times`)
        }
        // Each failing destination judged by the delivery of this check's first event: other checks' agents are
        // announced to it too, and their deliveries may have been given up already.
        const own = (entries: Record<string, unknown>[]) => entries.find((e) => e.event_id === ids[0])
        const failing = own(await logUntil(ctx, voidId, (entries) => own(entries)?.last_status_code === 503))
        if (
          failing?.last_status_code !== 503 ||
          !/no responders/i.test(String(failing.last_error ?? '')) ||
          !retried(failing)
        )
          problems.push(
            `a delivery to a subject nothing listens on is logged ${short(failing, 300)}, not retried with status 503 and NATS's "no responders"`,
          )
        const refusal = own(
          await logUntil(ctx, refusedId, (entries) =>
            String(own(entries)?.last_error ?? '').includes(REFUSAL),
          ),
        )
        if (
          refusal === undefined ||
          !String(refusal.last_error ?? '').includes(REFUSAL) ||
          refusal.last_status_code === 200 ||
          !retried(refusal)
        )
          problems.push(
            `a publish JetStream refused ("${REFUSAL}") is logged ${short(refusal, 300)}, not retried with JetStream's reason`,
          )
        await sub.drain()
        await refusing.drain()
        assert(problems.length === 0, problems.join('; '))
        if (secret)
          for (const id of created) {
            const read = await ctx.http.get(`/v1/destinations/${id}`)
            expectStatus(read, 200, 'GET /v1/destinations/{id}')
            assert(!read.text.includes(secret), "the destination answer shows the NATS server's credential")
          }
      } finally {
        await nc.close().catch(() => undefined)
        // Deleted here, not at the run's end: the destination that never delivers stops retrying now.
        for (const id of created) await ctx.http.delete(`/v1/destinations/${id}`).catch(() => undefined)
      }
    },
  },
  {
    id: 'destinations.slack-retry-after',
    title:
      "A slack destination whose service answers 429 or 503 with Retry-After (in seconds or as an HTTP-date), and a cloudevents one whose sink answers 429 or 503 with it, is retried after that wait (not three times longer), not at the outbox's backoff (a 500 with one keeps the backoff, and so do a 429 without one and a connection dropped without an answer, logged with no status code and an error that does not quote the webhook URL): the delivery log shows the answer's status and the next attempt no sooner than Retry-After says",
    level: 'profile',
    clauses: ['S6.5'],
    async run(ctx) {
      await skipWithoutDestinations(ctx)
      const tag = ctx.name('slow')
      const receiver = receiverUrl(ctx)
      // Slack's answers when it is rate limited or down: its error word, and when to come back.
      const RETRY_AFTER_S = 120
      const created: {
        id: string
        status: number
        retryAfter: string
        path: string
        token: string
        type: string
      }[] = []
      try {
        // Status 0: no answer at all, the connection dropped once the message arrived. Retry-After in either of
        // RFC 9110's forms: delay-seconds, or an HTTP-date that far ahead.
        const inDate = new Date(Date.now() + RETRY_AFTER_S * 1000).toUTCString()
        for (const [status, word, retryAfter, label, type] of [
          [429, 'rate_limited', String(RETRY_AFTER_S), '429', 'slack'],
          [503, 'service_unavailable', String(RETRY_AFTER_S), '503', 'slack'],
          [503, 'service_unavailable', inDate, '503-date', 'slack'],
          [500, 'internal_error', String(RETRY_AFTER_S), '500', 'slack'],
          [0, '', String(RETRY_AFTER_S), '0', 'slack'],
          // A downstream sink rate limiting the deployment says when to come back the same way.
          [429, 'rate_limited', String(RETRY_AFTER_S), 'ce-429', 'cloudevents'],
          [503, 'service_unavailable', String(RETRY_AFTER_S), 'ce-503', 'cloudevents'],
          [500, 'internal_error', String(RETRY_AFTER_S), 'ce-500', 'cloudevents'],
          // A 429 that does not say when to come back ('': no Retry-After) keeps the backoff.
          [429, 'rate_limited', '', 'ce-429-bare', 'cloudevents'],
        ] as const) {
          const token = `conf${randomBytes(8).toString('hex')}`
          const path = `/T0CONF/B0CONF/${token}/${tag}-${label}`
          ctx.receiver!.answerWith((p) => p.endsWith(path), {
            status,
            body: word,
            headers: {
              ...(retryAfter === '' ? {} : { 'retry-after': retryAfter }),
              'content-type': 'text/plain',
            },
            hangUp: status === 0,
          })
          const res = await ctx.http.post('/v1/destinations', {
            name: `${tag}-${label}`,
            type,
            events: ['agent.created'],
            ...(type === 'slack'
              ? { config: {}, secrets: { webhook_url: `${receiver}${path}` } }
              : { config: { url: `${receiver}${path}` } }),
          })
          if (refusesType(res))
            skip(
              `the deployment has no ${type} destinations: it refused one (${res.status} ${short(res.body, 200)})`,
            )
          expectStatus(res, 201, `creating a ${type} destination`)
          const id = ownId(res.body, 'destination')
          assert(id, `the destination answer has no destination_id: ${short(res.body)}`)
          created.push({ id, status, retryAfter, path, token, type })
        }
        await ctx.fx.newAgent()
        const problems: string[] = []
        for (const { id, status, retryAfter, path, token, type } of created) {
          const attempt = await ctx.receiver!.waitFor((d) => d.path.endsWith(path), ctx.config.waitMs)
          if (!attempt) {
            problems.push(
              `no message reached the receiver posing as Slack answering ${status} within ${ctx.config.waitMs} ms`,
            )
            continue
          }
          // Half the wait: room for the two clocks to differ, and still far beyond a first retry's backoff.
          const earliest = attempt.receivedAt + (RETRY_AFTER_S / 2) * 1000
          if (status === 0) {
            const attempted = (e: Record<string, unknown>) =>
              typeof e.attempts === 'number' && e.attempts >= 1
            // Other checks' agents are announced here too: a delivery still retried is judged first, as older
            // ones may have been given up already after the attempts the deployment allows.
            const log = await logUntil(ctx, id, (entries) => entries.some(attempted))
            const entry = log.find((e) => attempted(e) && e.status === 'pending') ?? log.find(attempted)
            const next = Date.parse(String(entry?.next_attempt_at ?? ''))
            if (
              entry?.status !== 'pending' ||
              entry.last_status_code !== null ||
              typeof entry.last_error !== 'string' ||
              entry.last_error === '' ||
              !(next < earliest)
            )
              problems.push(
                `after the connection to Slack dropped without an answer, the delivery is logged ${short(entry ?? null, 300)}: not pending a retry at the backoff, with no status code and an error saying why`,
              )
            else if (entry.last_error.includes(token))
              problems.push(
                `the delivery log's last_error quotes the webhook URL: ${short(entry.last_error)}`,
              )
            continue
          }
          if (status === 500 || retryAfter === '') {
            // The profile waits out Retry-After on a 429 or 503 only: any other failure, and one that does not say
            // when to come back, keeps the outbox's backoff.
            // A delivery attempted again already (perhaps given up since, after the attempts the deployment
            // allows) did not wait the 120 s: this destination is younger than that.
            const backedOff = (e: Record<string, unknown>) => e.last_status_code === status && retried(e)
            const log = await logUntil(ctx, id, (entries) => entries.some(backedOff))
            const entry = log.find(backedOff) ?? log.find((e) => e.last_status_code === status)
            const next = Date.parse(String(entry?.next_attempt_at ?? ''))
            const again = typeof entry?.attempts === 'number' && entry.attempts > 1
            if (!again && (entry?.status !== 'pending' || !(next < earliest)))
              problems.push(
                `after the ${type} destination's service answered ${status} (${retryAfter === '' ? 'with no Retry-After' : `with a Retry-After ${RETRY_AFTER_S} the profile heeds on 429 and 503 only`}), the delivery is logged ${short(entry ?? log, 300)}: not pending a retry at the backoff`,
              )
            continue
          }
          const retrying = (e: Record<string, unknown>) =>
            e.last_status_code === status && typeof e.next_attempt_at === 'string'
          const log = await logUntil(ctx, id, (entries) => entries.some(retrying))
          const entry = log.find(retrying) ?? log.find((e) => e.last_status_code === status)
          const next = Date.parse(String(entry?.next_attempt_at ?? ''))
          // Waiting longer than asked is allowed (a deployment may add its own backoff), but not without bound.
          const latest = attempt.receivedAt + 3 * RETRY_AFTER_S * 1000
          if (entry?.status !== 'pending' || !(next >= earliest && next <= latest))
            problems.push(
              `after the ${type} destination's service answered ${status} with Retry-After: ${retryAfter}, the delivery is logged ${short(entry ?? log, 300)}: not pending until ${RETRY_AFTER_S} s after the attempt (and no more than ${3 * RETRY_AFTER_S} s)`,
            )
          // The same message again is a retry; another event's message (an agent another check made meanwhile) is not.
          const again = ctx.receiver!.deliveries.filter(
            (d) => d.path.endsWith(path) && sameJson(d.body, attempt.body),
          ).length
          if (again > 1)
            problems.push(
              `the message answered ${status} with Retry-After: ${retryAfter} was sent ${again} times within it`,
            )
        }
        assert(problems.length === 0, problems.join('; '))
      } finally {
        // Deleted here: the deliveries waiting out Retry-After are not attempted again.
        for (const { id } of created) await ctx.http.delete(`/v1/destinations/${id}`).catch(() => undefined)
      }
    },
  },
]
