/**
 * Spec §6: "Events can be routed to webhooks and to chat, paging and downstream systems"; how routing is configured
 * is not shown, so every check here is profile: the reference's `/v1/destinations`. The suite's receiver poses as
 * the destination's service and judges each body against that service's documented shape (CloudEvents 1.0's HTTP
 * binding for `cloudevents`). A deployment without `/v1/destinations` skips them.
 */
import { randomBytes } from 'node:crypto'
import type { Check, CheckContext } from '../check.js'
import { expectStatus, ownId, pageItems } from '../fixtures.js'
import { type HttpResponse, obj } from '../http.js'
import { type Delivery, hostAndPort } from '../receiver.js'
import { assert, fail, skip } from '../types.js'
import { short } from '../wait.js'
import { pagerDutyEventProblems, slackMessageProblems } from './destination-bodies.js'
import { type Probe, redeliverDuringAttempt, runProbes } from './extensions.js'
import { decided } from './outcomes.js'
import { atTag, receiverUrl } from './webhooks.js'

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

/** What a check creates a destination with: its type, its kinds, its settings, and the secret no answer may show. */
interface DestinationSpec {
  type: string
  events: string[]
  config: Record<string, unknown>
  secrets: Record<string, string>
  secret: string
}

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
function ensureDestination(
  ctx: CheckContext,
  type: string,
  spec: (receiver: string, tag: string) => DestinationSpec,
): Promise<Sink> {
  const mine = destinations.get(ctx.config) ?? new Map<string, Promise<Sink>>()
  destinations.set(ctx.config, mine)
  let p = mine.get(type)
  if (!p) {
    p = (async () => {
      const probe = await ctx.http.get('/v1/destinations')
      if (probe.status === 404 || probe.status === 405)
        skip('the deployment has no /v1/destinations (no chat, paging or downstream destinations declared)')
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
      ctx.cleanup(`delete destination ${id}`, () => ctx.http.delete(`/v1/destinations/${id}`))
      assert(!res.text.includes(secret), 'the creation answer shows the secret')
      return { id, tag, secret }
    })()
    mine.set(type, p)
    p.catch(() => mine.delete(type))
  }
  return p
}

/** A pagerduty destination's own settings, which its incidents carry. */
const PAGER_SETTINGS = {
  source: 'conformance-source',
  component: 'conformance-component',
  severity: 'critical',
}

/** A cloudevents destination of its own at the receiver, in binary mode, for agent.created. */
const ensureSink = (ctx: CheckContext) =>
  ensureDestination(ctx, 'cloudevents', (receiver, tag) => {
    const secret = `Bearer conf-secret-${randomBytes(12).toString('hex')}`
    return {
      type: 'cloudevents',
      events: ['agent.created'],
      config: { url: `${receiver}/${tag}`, mode: 'binary' },
      secrets: { authorization: secret },
      secret,
    }
  })

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
    id: 'destinations.slack-incoming-webhook',
    title:
      'A slack destination posts each event it lists once, as a Slack incoming-webhook message (JSON with a text or Block Kit blocks of documented types within their limits) naming the run and its agent, logged delivered once Slack answered 200; its webhook URL is never answered',
    level: 'profile',
    clauses: ['S6.5'],
    async run(ctx) {
      const hook = await ensureDestination(ctx, 'slack', (receiver, tag) => {
        // The receiver poses as Slack: the URL's last segments are the credential, as in hooks.slack.com/services/….
        const token = `conf${randomBytes(12).toString('hex')}`
        return {
          type: 'slack',
          events: ['run.awaiting_approval'],
          config: {},
          secrets: { webhook_url: `${receiver}/T0CONF/B0CONF/${token}/${tag}` },
          secret: token,
        }
      })
      const since = Date.now()
      const { runId, agentId } = await ctx.fx.awaitingRun()
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
      const problems = slackMessageProblems(got)
      if (!got.raw.includes(agentId)) problems.push(`the message does not name the run's agent ${agentId}`)
      const copies = ctx.receiver!.deliveries.filter((d) => forRun(d) && d.status < 300).length
      if (copies > 1) problems.push(`the message arrived ${copies} times`)
      const logged = await deliveredInLog(ctx, hook)
      if (logged) problems.push(logged)
      assert(problems.length === 0, `the Slack message about run ${runId}: ${problems.join('; ')}`)
      await secretKept(ctx, hook)
    },
  },
  {
    id: 'destinations.pagerduty-events-v2',
    title:
      'A pagerduty destination triggers an Events API v2 incident for a run that awaits approval (its routing_key, a summary, the source, component and severity it was configured with, a dedup_key) and resolves that dedup_key once the step is approved; its routing key is never answered',
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
      const trigger = await ctx.receiver!.waitFor(
        (d) => atTag(pager.tag)(d) && d.body?.event_action === 'trigger' && d.raw.includes(runId),
        ctx.config.waitMs,
      )
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
      const resolve = await ctx.receiver!.waitFor(
        (d) => atTag(pager.tag)(d) && d.body?.event_action === 'resolve' && d.body.dedup_key === key,
        ctx.config.waitMs,
      )
      if (!resolve)
        fail(
          `run ${runId}'s step was approved, but no resolve with the trigger's dedup_key ${key} reached the receiver within ${ctx.config.waitMs} ms`,
        )
      const resolveProblems = pagerDutyEventProblems(resolve, pager.secret)
      assert(resolveProblems.length === 0, `the resolve for run ${runId}: ${resolveProblems.join('; ')}`)
      await secretKept(ctx, pager)
    },
  },
  {
    id: 'destinations.operations',
    title:
      'The destination operations answer as documented: list, read, change, test, delivery log, redelivery (409 while an attempt is in progress), delete; bad input is 400, an unknown id 404, a creation key reused with another body 409',
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
          config: { url: 'https://sink.invalid/x' },
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
        },
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
        if (id) ctx.cleanup(`delete destination ${id}`, () => ctx.http.delete(`/v1/destinations/${id}`))
        const again = await ctx.http.post('/v1/destinations', { ...keyed, name: 'other' }, createKey)
        if (again.status !== 409)
          wrong.push(`the same creation key with another body answered ${again.status}, not 409`)
        if (id) {
          const gone = await ctx.http.delete(`/v1/destinations/${id}`)
          if (gone.status !== 204) wrong.push(`DELETE /v1/destinations/{id} answered ${gone.status}, not 204`)
        }
      }
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
]
