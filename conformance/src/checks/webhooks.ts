/**
 * Spec §5.5 and §6: deliveries arrive at the subscriber's url, carry `signature` of the form
 * `t=<timestamp>,v1=<hex_digest>` (HMAC-SHA256). The signed string is not shown: core demands HMAC-SHA256 under
 * the subscription's secret over one of the common constructions; the reference profile's exact string is profile.
 */
import { createHmac, randomBytes } from 'node:crypto'
import type { Check, CheckContext } from '../check.js'
import { settingName } from '../config.js'
import { eventOf, fieldOf } from '../delivery-body.js'
import { expectStatus, ownId, pageItems } from '../fixtures.js'
import { type HttpClient, obj } from '../http.js'
import { type Delivery, receiverAdvice } from '../receiver.js'
import {
  discoveredTemplates,
  isSha256Hex,
  matchingConstruction,
  parseSignature,
  verifySignature,
} from '../signature.js'
import { assert, fail, skip } from '../types.js'
import { short } from '../wait.js'
import { isRfc3339 } from './assertions.js'

export const SPEC_EVENTS = [
  'run.started',
  'run.awaiting_approval',
  'run.succeeded',
  'run.failed',
  'policy.denied',
]

interface Hook {
  id: string
  secret: string
  url: string
  /** The last path segment of `url`, unique to this run's subscription. */
  tag: string
}

/** A fresh subscription secret, in the form every subscription of the suite uses. */
export const webhookSecret = () => `whsec-conf-${randomBytes(12).toString('hex')}`

/** Whether a delivery was posted to the receiver path that ends in `tag` (its query aside). */
export const atTag =
  (tag: string) =>
  (d: { path: string }): boolean =>
    (d.path.split('?')[0] ?? '').endsWith(`/${tag}`)

/**
 * Whether a delivery was addressed to this run's subscription. A long-lived deployment may hold subscriptions of
 * earlier runs (a cleanup that failed) that post to the same receiver URL under their own secrets.
 */
export const toHook = (d: Delivery, hook: Hook) => atTag(hook.tag)(d)

/** A check's own subscription: its deliveries are the receiver's posts to `url`, told apart by `mine`. */
export interface OwnHook {
  /** Absent when the answer names none (§5.5: "Webhook subscription response fields: not shown"). */
  id: string | undefined
  tag: string
  url: string
  secret: string
  mine: (d: { path: string }) => boolean
}

/**
 * Subscribes `events` to a receiver path of the check's own (a fresh tag after `label`) and deletes the subscription
 * at the end of the run. `as` subscribes with another identity; `what` names the step in a failure; `status` the
 * answers that count as created (200 or 201 unless given).
 */
export async function ownHook(
  ctx: CheckContext,
  label: string,
  events: string[],
  options: { secret?: string; as?: HttpClient; what?: string; status?: number[] } = {},
): Promise<OwnHook> {
  const client = options.as ?? ctx.http
  const tag = ctx.name(label)
  const url = `${receiverUrl(ctx)}/${tag}`
  const secret = options.secret ?? webhookSecret()
  const res = await client.post('/v1/webhooks', { url, events, secret })
  expectStatus(res, options.status ?? [200, 201], options.what ?? `subscribing to ${events.join(', ')}`)
  const id = ownId(res.body, 'webhook')
  if (id)
    ctx.cleanup(`delete webhook ${id}`, (http) => http.withToken(client.token).delete(`/v1/webhooks/${id}`))
  return { id, tag, url, secret, mine: atTag(tag) }
}

/**
 * What became of the deliveries of `kind` to a check's own subscription, for a failure that found none in time: the
 * receiver's count at its path and the deployment's log entries of that kind (status, attempts, last answer), so a
 * missed delivery names its cause (never attempted, refused, given up) instead of only its absence.
 */
export async function deliveryTrail(ctx: CheckContext, hook: OwnHook, kind: string): Promise<string> {
  const received = (ctx.receiver?.deliveries ?? []).filter((d) => hook.mine(d) && eventOf(d) === kind).length
  const seen = `the receiver has ${received} ${kind} at ${hook.tag}`
  if (!hook.id) return seen
  const res = await ctx.http.get(`/v1/webhooks/${hook.id}/deliveries?limit=200`)
  if (res.status !== 200) return `${seen}; its delivery log answered ${res.status}`
  const entries = (pageItems(res.body) ?? []).map(obj).filter((e) => e.event === kind)
  const told = entries.slice(-5).map((e) => {
    const last = [e.last_status_code, e.last_error].filter((v) => v !== null && v !== undefined).map(short)
    return `${short(e.status)} after ${short(e.attempts)} attempts${last.length > 0 ? ` (last ${last.join(' ')})` : ''}`
  })
  return `${seen}; the log holds ${entries.length} ${kind}${told.length > 0 ? `: ${told.join('; ')}` : ''}`
}

/** The id of a subscription a check goes on to address (its log, its secret): a failure when the answer has none. */
export function hookId(hook: OwnHook): string {
  if (!hook.id) fail(`the answer to the subscription at ${hook.url} has no webhook_id`)
  return hook.id
}

const hooks = new WeakMap<object, Promise<Hook>>()
interface ApprovalRun {
  runId: string
  agentId: string
  /** The run's inspection once it awaited approval. */
  waiting: Record<string, unknown>
}
const approvals = new WeakMap<object, Promise<ApprovalRun>>()

export function receiverUrl(ctx: CheckContext): string {
  if (!ctx.receiver || !ctx.config.receiver.url)
    skip(`no webhook receiver: set ${settingName('receiver-url')} to a URL the deployment can call`)
  return ctx.config.receiver.url
}

/** One subscription to every spec event kind, pointing at the suite's receiver; deleted at the end. */
export function ensureWebhook(ctx: CheckContext): Promise<Hook> {
  let p = hooks.get(ctx.config)
  if (!p) {
    p = (async () => {
      const tag = ctx.name('hook')
      const url = `${receiverUrl(ctx)}/${tag}`
      const secret = webhookSecret()
      const res = await ctx.http.post('/v1/webhooks', { url, events: SPEC_EVENTS, secret })
      if (res.status >= 400 && res.status < 500 && res.status !== 429)
        fail(receiverAdvice(url, `the deployment refused it (${res.status} ${short(res.body, 200)})`))
      expectStatus(res, [200, 201], 'creating a webhook subscription')
      const id = obj(res.body).webhook_id ?? obj(res.body).id
      if (typeof id !== 'string') fail(`the subscription answer has no webhook_id: ${short(res.body)}`)
      ctx.cleanup(`delete webhook ${id}`, (http) => http.delete(`/v1/webhooks/${id}`))
      return { id, secret, url, tag }
    })()
    hooks.set(ctx.config, p)
    p.catch(() => hooks.delete(ctx.config))
  }
  return p
}

/** Starts an approval-needing run once, after the subscription exists, so its events are delivered. */
function approvalRun(ctx: CheckContext): Promise<ApprovalRun> {
  let p = approvals.get(ctx.config)
  if (!p) {
    p = (async () => {
      await ensureWebhook(ctx)
      const run = await ctx.fx.awaitingRun()
      return { runId: run.runId, agentId: run.agentId, waiting: run.waiting }
    })()
    approvals.set(ctx.config, p)
    p.catch(() => approvals.delete(ctx.config))
  }
  return p
}

/**
 * The delivery of `event` for the shared approval-awaiting run (started once, after the subscription), with that
 * run as the suite saw it.
 */
export async function deliveryFor(
  ctx: CheckContext,
  event: string,
): Promise<{ delivery: Delivery; body: Record<string, unknown>; run: ApprovalRun }> {
  const run = await approvalRun(ctx)
  const hook = await ensureWebhook(ctx)
  const delivery = await ctx.receiver!.waitFor(
    (d) => toHook(d, hook) && fieldOf(d, 'run_id') === run.runId && eventOf(d) === event,
    ctx.config.waitMs,
  )
  if (!delivery?.body) noDelivery(ctx, `${event} delivery for run ${run.runId}`)
  return { delivery, body: delivery.body, run }
}

/** Fails saying what did not arrive, and, when nothing at all reached the receiver, what to set. */
function noDelivery(ctx: CheckContext, what: string): never {
  const url = ctx.config.receiver.url ?? ''
  if (ctx.receiver?.deliveries.length === 0)
    fail(
      receiverAdvice(
        url,
        `no delivery at all reached it within ${ctx.config.waitMs} ms (waiting for a ${what})`,
      ),
    )
  fail(
    `no ${what} reached the receiver within ${ctx.config.waitMs} ms (other deliveries did arrive; if this deployment delivers later than that, raise ${settingName('wait-ms')})`,
  )
}

interface RetryProbe {
  first: Delivery
  retry: Delivery
  /** The attempt after the retry (also answered 500), when it came within --wait-ms. */
  third: Delivery | undefined
}

const retryProbes = new WeakMap<object, Promise<RetryProbe>>()

/**
 * Fails the first run.started delivery of a fresh agent's run and waits for the deployment to send it again.
 * Started early (by webhooks.subscribe) and judged late (webhookLateChecks), so the backoff overlaps other checks.
 */
function retryProbe(ctx: CheckContext): Promise<RetryProbe> {
  let p = retryProbes.get(ctx.config)
  if (!p) {
    p = (async () => {
      const hook = await ensureWebhook(ctx)
      const tool = await ctx.fx.tool('succeed')
      const agent = await ctx.fx.newToolAgent([tool])
      const started = (b: Record<string, unknown> | undefined) =>
        fieldOf({ body: b }, 'agent_id') === agent.id && eventOf({ body: b }) === 'run.started'
      const mine = (b: Record<string, unknown> | undefined, path: string) =>
        started(b) && atTag(hook.tag)({ path })
      // The first two attempts are answered 500, so a third shows the deployment keeps retrying.
      ctx.receiver!.failNext(mine, 2)
      await ctx.fx.startRun(agent)
      const first = await ctx.receiver!.waitFor((d) => mine(d.body, d.path), ctx.config.waitMs)
      if (!first) noDelivery(ctx, 'run.started delivery (to be failed with 500)')
      assert(first.status === 500, 'the receiver did not fail the first delivery')
      const retry = await ctx.receiver!.waitFor((d) => d !== first && mine(d.body, d.path), ctx.config.waitMs)
      if (!retry)
        fail(
          `a run.started delivery answered 500 was not sent again within ${ctx.config.waitMs} ms. The spec leaves the backoff timing open: if this deployment's first retry comes later than that (e.g. after 30 s), the suite's wait is the cause: raise ${settingName('wait-ms')} above it`,
        )
      const third = await ctx.receiver!.waitFor(
        (d) => d !== first && d !== retry && mine(d.body, d.path),
        ctx.config.waitMs,
      )
      return { first, retry, third }
    })()
    retryProbes.set(ctx.config, p)
    p.catch(() => retryProbes.delete(ctx.config))
  }
  return p
}

/** Spec §6: the run.awaiting_approval delivery body's fields. */
const AWAITING_APPROVAL_FIELDS = [
  'event',
  'ts',
  'run_id',
  'agent_id',
  'step_id',
  'queue',
  'reason',
  'payload_preview',
  'signature',
]

export const webhookChecks: Check[] = [
  {
    id: 'webhooks.subscribe',
    title: 'POST /v1/webhooks with url, events and secret creates a subscription',
    level: 'core',
    clauses: ['S2.12', 'S4.11', 'S6.3'],
    async run(ctx) {
      await ensureWebhook(ctx)
      // The retry checks judge this late; failures surface there.
      if (ctx.receiver) retryProbe(ctx).catch(() => undefined)
    },
  },
  {
    id: 'webhooks.signature-hmac',
    title:
      'Every delivery’s v1 is HMAC-SHA256 under the subscription’s secret over the timestamp and the delivered body',
    level: 'core',
    clauses: ['S5.5', 'S6.1'],
    async run(ctx) {
      const hook = await ensureWebhook(ctx)
      const { runId } = await approvalRun(ctx)
      await deliveryFor(ctx, 'run.awaiting_approval')
      const mine = ctx.receiver!.deliveries.filter(
        (d) => toHook(d, hook) && fieldOf(d, 'run_id') === runId && d.status === 200,
      )
      assert(mine.length > 0, 'no deliveries to verify')
      for (const d of mine) {
        const id = d.headers['webhook-id'] ?? d.body!.id
        const declared = ctx.config.signatureTemplate
        const how = matchingConstruction(
          d.raw,
          d.body!,
          hook.secret,
          typeof id === 'string' ? id : undefined,
          d.headers,
          declared,
        )
        assert(
          how !== undefined,
          declared
            ? `the ${String(eventOf(d))} delivery's v1 is not HMAC-SHA256 under the subscription's secret over the declared "${declared}" (signature.signed in --config)`
            : `the ${String(eventOf(d))} delivery's v1 is not HMAC-SHA256 under the subscription's secret over any of the common arrangements (${discoveredTemplates(d.headers).join(', ')}); declare the signed string as signature.signed in --config, e.g. "{body}"`,
        )
      }
    },
  },
  {
    id: 'webhooks.only-subscribed-kinds',
    title: 'A subscription receives only the event kinds it listed in events',
    level: 'core',
    clauses: ['S6.3', 'S2.12', 'S4.12'],
    async run(ctx) {
      const hook = await ensureWebhook(ctx)
      const only = await ownHook(ctx, 'only-succeeded', ['run.succeeded'], {
        what: 'subscribing to run.succeeded only',
      })
      const remove = () => (only.id ? ctx.http.delete(`/v1/webhooks/${only.id}`) : Promise.resolve())
      const tool = await ctx.fx.tool('succeed')
      const { runId } = await ctx.fx.startRun(await ctx.fx.newToolAgent([tool]))
      const ours = only.mine
      const of = (d: Delivery) => fieldOf(d, 'run_id') === runId
      const succeeded = await ctx.receiver!.waitFor(
        (d) => ours(d) && of(d) && eventOf(d) === 'run.succeeded',
        ctx.config.waitMs,
      )
      if (!succeeded) noDelivery(ctx, `run.succeeded delivery for run ${runId} at the run.succeeded-only url`)
      // The all-kinds subscription shows the other kinds were sent, so ours had its chance to get them too.
      const started = await ctx.receiver!.waitFor(
        (d) => toHook(d, hook) && of(d) && eventOf(d) === 'run.started',
        ctx.config.waitMs,
      )
      if (!started) noDelivery(ctx, `run.started delivery for run ${runId}`)
      await remove().catch(() => undefined)
      const wrong = ctx.receiver!.deliveries.filter((d) => ours(d) && eventOf(d) !== 'run.succeeded')
      assert(
        wrong.length === 0,
        `a subscription to run.succeeded only received ${wrong.map((d) => String(eventOf(d))).join(', ')}`,
      )
    },
  },
  {
    id: 'webhooks.delivery-arrives',
    title: 'A run’s events are POSTed to the subscribed url as JSON',
    level: 'core',
    clauses: ['S1.2', 'S1.8', 'S1.10', 'S3.5', 'S4.12'],
    async run(ctx) {
      const { delivery } = await deliveryFor(ctx, 'run.started')
      // §4, Webhooks: "POST | the subscriber's own `url` | Event delivery body".
      assert(delivery.method === 'POST', `the delivery came as ${delivery.method || 'no method'}, not POST`)
      assert(
        delivery.body && typeof delivery.body.signature === 'string',
        'the delivery body has no signature field',
      )
      // §1, conventions that apply everywhere: "Body format | `application/json`, UTF-8." A delivery's body is one
      // (§4 "Event delivery body"), so its Content-Type is JSON's (a +json suffix is JSON too), UTF-8 when it says.
      const type = String(delivery.headers['content-type'] ?? '')
      assert(
        /^application\/([\w.-]+\+)?json\s*(;|$)/i.test(type),
        `the delivery's Content-Type is ${type === '' ? 'missing' : type}, not application/json`,
      )
      const charset = /;\s*charset="?([^";\s]+)/i.exec(type)?.[1]
      assert(
        charset === undefined || /^utf-?8$/i.test(charset),
        `the delivery's Content-Type names charset ${charset}, not UTF-8`,
      )
    },
  },
  {
    id: 'webhooks.awaiting-approval-body',
    title: 'The run.awaiting_approval delivery carries every field of spec §6',
    level: 'core',
    clauses: ['S1.8', 'S3.5', 'S6.4'],
    async run(ctx) {
      const { body } = await deliveryFor(ctx, 'run.awaiting_approval')
      for (const f of AWAITING_APPROVAL_FIELDS.filter((f) => f !== 'payload_preview')) {
        assert(typeof body[f] === 'string', `field ${f} is missing or not a string in ${short(body)}`)
      }
      assert(body.event === 'run.awaiting_approval', `event is ${String(body.event)}`)
      assert(isRfc3339(body.ts), `ts is not RFC 3339: ${String(body.ts)}`)
      const preview = body.payload_preview
      assert(
        preview !== null && typeof preview === 'object' && !Array.isArray(preview),
        'payload_preview is not an object',
      )
    },
  },
  {
    id: 'webhooks.awaiting-approval-body-exact',
    title: 'The run.awaiting_approval delivery carries spec §6’s fields and the event’s id, nothing more',
    level: 'profile',
    clauses: ['S6.4'],
    async run(ctx) {
      const { body } = await deliveryFor(ctx, 'run.awaiting_approval')
      const listed = new Set([...AWAITING_APPROVAL_FIELDS, 'id'])
      const extra = Object.keys(body).filter((k) => !listed.has(k))
      assert(
        extra.length === 0,
        `the body carries ${extra.join(', ')} besides spec §6's fields: ${short(body)}`,
      )
    },
  },
  {
    id: 'webhooks.signature-form',
    title: 'signature has the form t=<timestamp>,v1=<hex SHA-256 digest>',
    level: 'core',
    clauses: ['S5.5', 'S6.1'],
    async run(ctx) {
      const { body } = await deliveryFor(ctx, 'run.started')
      // §5.5 "a `signature` field of the form `t=<timestamp>,v1=<hex_digest>`"; the timestamp's form is not shown:
      // Unix seconds or RFC 3339 (signature.timestamp in --config narrows it).
      const form = ctx.config.signatureTimestamp
      const parsed = parseSignature(body.signature, form)
      assert(
        parsed,
        `signature does not match t=<timestamp>,v1=<hex_digest> with a ${form === 'any' ? 'Unix-seconds or RFC 3339' : form} timestamp (signature.timestamp in --config): ${String(body.signature)}`,
      )
      for (const hex of parsed.v1)
        assert(isSha256Hex(hex), `v1=${hex} is not a 64-digit lowercase hex SHA-256 digest`)
    },
  },
  {
    id: 'webhooks.signature-verifies',
    title: 'v1 is HMAC-SHA256(secret, "<t>." + JCS(body without signature)) for every delivery',
    level: 'profile',
    clauses: ['S5.5', 'S6.1'],
    async run(ctx) {
      const hook = await ensureWebhook(ctx)
      const { runId } = await approvalRun(ctx)
      await deliveryFor(ctx, 'run.awaiting_approval')
      const mine = ctx.receiver!.deliveries.filter((d) => toHook(d, hook) && fieldOf(d, 'run_id') === runId)
      assert(mine.length > 0, 'no deliveries to verify')
      for (const d of mine) {
        const verdict = verifySignature(d.body!, hook.secret, Math.floor(Date.now() / 1000), 3600)
        assert(verdict.ok, `delivery ${String(d.body!.id)} (${String(d.body!.event)}): ${verdict.reason}`)
      }
    },
  },
  {
    id: 'webhooks.signature-binds-body-and-secret',
    title: 'The signature does not verify for a tampered body or a wrong secret',
    level: 'profile',
    clauses: ['S5.5'],
    async run(ctx) {
      const hook = await ensureWebhook(ctx)
      const { body } = await deliveryFor(ctx, 'run.awaiting_approval')
      const now = Math.floor(Date.now() / 1000)
      assert(verifySignature(body, hook.secret, now, 3600).ok, 'the untouched delivery does not verify')
      const tampered = { ...body, reason: `${String(body.reason)} (tampered)` }
      assert(!verifySignature(tampered, hook.secret, now, 3600).ok, 'a tampered body still verifies')
      assert(!verifySignature(body, `${hook.secret}x`, now, 3600).ok, 'a wrong secret still verifies')
    },
  },
  {
    id: 'webhooks.timestamp-fresh',
    title: 'The signature timestamp is Unix seconds within 300 s of the delivery',
    level: 'profile',
    clauses: ['S5.5'],
    async run(ctx) {
      const { delivery, body } = await deliveryFor(ctx, 'run.started')
      const parsed = parseSignature(body.signature, 'unix')
      assert(parsed, `t= is not Unix seconds: ${String(body.signature)}`)
      const skew = Math.abs(Math.floor(delivery.receivedAt / 1000) - Number(parsed.t))
      assert(skew <= 300, `t=${parsed.t} is ${skew} s away from the time the delivery arrived`)
    },
  },
  {
    id: 'webhooks.standard-webhooks-headers',
    title:
      'Deliveries carry webhook-id, webhook-timestamp and a verifying webhook-signature (Standard Webhooks)',
    level: 'profile',
    clauses: ['S5.5'],
    async run(ctx) {
      const hook = await ensureWebhook(ctx)
      const { delivery } = await deliveryFor(ctx, 'run.started')
      const id = String(delivery.headers['webhook-id'] ?? '')
      const ts = String(delivery.headers['webhook-timestamp'] ?? '')
      const sig = String(delivery.headers['webhook-signature'] ?? '')
      assert(id && ts && sig, `missing Standard Webhooks headers: ${short(delivery.headers)}`)
      const key = hook.secret.startsWith('whsec_')
        ? Buffer.from(hook.secret.slice(6), 'base64')
        : Buffer.from(hook.secret)
      const expected = createHmac('sha256', key).update(`${id}.${ts}.${delivery.raw}`).digest('base64')
      assert(
        sig.split(' ').some((s) => s === `v1,${expected}`),
        `webhook-signature does not verify over "<id>.<timestamp>.<raw body>": ${sig}`,
      )
    },
  },
]

/** Judged at the end of the run: the retry probe started by webhooks.subscribe has had its backoff by then. */
export const webhookLateChecks: Check[] = [
  {
    id: 'webhooks.retried-until-accepted',
    title: 'A delivery failed twice (500, 500) is attempted a third time, the same event each time',
    level: 'core',
    clauses: ['S6.2'],
    async run(ctx) {
      // §6 "Webhook deliveries ... are retried with exponential backoff": retrying is more than one second try.
      // The gaps are not judged: exponential backoff with jitter (full jitter draws each wait from [0, ceiling])
      // lets one gap be shorter than the one before, so a growth assertion would fail correct deployments.
      receiverUrl(ctx)
      const { first, retry, third } = await retryProbe(ctx)
      if (!third)
        fail(
          `a delivery answered 500 twice was not attempted a third time within ${ctx.config.waitMs} ms after the second attempt (raise --wait-ms if the deployment's backoff is longer)`,
        )
      for (const d of [retry, third]) {
        assert(eventOf(d) === eventOf(first), `attempt carries another event kind (${String(eventOf(d))})`)
        assert(
          fieldOf(d, 'run_id') === fieldOf(first, 'run_id'),
          `attempt carries another run (${short(fieldOf(d, 'run_id'))})`,
        )
        if (first.body?.id !== undefined)
          assert(d.body?.id === first.body.id, `attempt carries another event id (${short(d.body?.id)})`)
      }
    },
  },
  {
    id: 'webhooks.failed-delivery-retried',
    title: 'A delivery the receiver fails (500) is sent again',
    level: 'core',
    clauses: ['S6.2'],
    async run(ctx) {
      receiverUrl(ctx)
      const { first, retry } = await retryProbe(ctx)
      assert(eventOf(retry) === eventOf(first), 'the retry is another event kind')
    },
  },
  {
    id: 'webhooks.retried-after-failure',
    title: 'A delivery the receiver answers 500 is retried with the same event id and a fresh signature',
    level: 'profile',
    clauses: ['S6.2'],
    async run(ctx) {
      receiverUrl(ctx)
      const hook = await ensureWebhook(ctx)
      const { first, retry } = await retryProbe(ctx)
      assert(
        retry.body!.id === first.body!.id,
        `the retry has another event id (${short(retry.body!.id)} vs ${short(first.body!.id)})`,
      )
      const verdict = verifySignature(retry.body!, hook.secret, Math.floor(Date.now() / 1000))
      assert(verdict.ok, `the retry does not verify: ${verdict.reason}`)
    },
  },
]
