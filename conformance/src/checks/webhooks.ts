/**
 * Spec §5.5 and §6: deliveries arrive at the subscriber's url, carry `signature` of the form
 * `t=<timestamp>,v1=<hex_digest>` (HMAC-SHA256). The signed string is a reference-profile decision, so the
 * verification is a profile check while the field's form and digest length are core.
 */
import { createHmac, randomBytes } from 'node:crypto'
import type { Check, CheckContext } from '../check.js'
import { expectStatus } from '../fixtures.js'
import { obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import { isSha256Hex, parseSignature, verifySignature } from '../signature.js'
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
}

const hooks = new WeakMap<object, Promise<Hook>>()
const approvals = new WeakMap<object, Promise<{ runId: string; agentId: string }>>()

function receiverUrl(ctx: CheckContext): string {
  if (!ctx.receiver || !ctx.config.receiver.url)
    skip('no webhook receiver (set --receiver-host/--receiver-port/--receiver-url)')
  return ctx.config.receiver.url
}

/** One subscription to every spec event kind, pointing at the suite's receiver; deleted at the end. */
export function ensureWebhook(ctx: CheckContext): Promise<Hook> {
  let p = hooks.get(ctx.config)
  if (!p) {
    p = (async () => {
      const url = receiverUrl(ctx)
      const secret = `whsec-conf-${randomBytes(12).toString('hex')}`
      const res = await ctx.http.post('/v1/webhooks', { url, events: SPEC_EVENTS, secret })
      expectStatus(res, [200, 201], 'creating a webhook subscription')
      const id = obj(res.body).webhook_id ?? obj(res.body).id
      if (typeof id !== 'string') fail(`the subscription answer has no webhook_id: ${short(res.body)}`)
      ctx.cleanup(`delete webhook ${id}`, () => ctx.http.delete(`/v1/webhooks/${id}`))
      return { id, secret, url }
    })()
    hooks.set(ctx.config, p)
    p.catch(() => hooks.delete(ctx.config))
  }
  return p
}

/** Starts an approval-needing run once, after the subscription exists, so its events are delivered. */
function approvalRun(ctx: CheckContext): Promise<{ runId: string; agentId: string }> {
  let p = approvals.get(ctx.config)
  if (!p) {
    p = (async () => {
      await ensureWebhook(ctx)
      const run = await ctx.fx.awaitingRun()
      return { runId: run.runId, agentId: run.agentId }
    })()
    approvals.set(ctx.config, p)
    p.catch(() => approvals.delete(ctx.config))
  }
  return p
}

async function deliveryFor(
  ctx: CheckContext,
  event: string,
): Promise<{ delivery: Delivery; body: Record<string, unknown> }> {
  const run = await approvalRun(ctx)
  const delivery = await ctx.receiver!.waitFor(
    (d) => d.body?.run_id === run.runId && (d.body?.event === event || d.body?.type === event),
    ctx.config.waitMs,
  )
  if (!delivery?.body)
    fail(`no ${event} delivery for run ${run.runId} reached the receiver within ${ctx.config.waitMs} ms`)
  return { delivery, body: delivery.body }
}

export const webhookChecks: Check[] = [
  {
    id: 'webhooks.subscribe',
    title: 'POST /v1/webhooks with url, events and secret creates a subscription',
    level: 'core',
    sections: ['§4', '§2'],
    async run(ctx) {
      await ensureWebhook(ctx)
    },
  },
  {
    id: 'webhooks.delivery-arrives',
    title: 'A run’s events are POSTed to the subscribed url as JSON',
    level: 'core',
    sections: ['§6', '§4'],
    async run(ctx) {
      const { delivery } = await deliveryFor(ctx, 'run.started')
      assert(
        delivery.body && typeof delivery.body.signature === 'string',
        'the delivery body has no signature field',
      )
    },
  },
  {
    id: 'webhooks.awaiting-approval-body',
    title: 'The run.awaiting_approval delivery carries every field of spec §6',
    level: 'core',
    sections: ['§6'],
    async run(ctx) {
      const { body } = await deliveryFor(ctx, 'run.awaiting_approval')
      for (const f of ['event', 'ts', 'run_id', 'agent_id', 'step_id', 'queue', 'reason', 'signature']) {
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
    id: 'webhooks.signature-form',
    title: 'signature has the form t=<timestamp>,v1=<hex SHA-256 digest>',
    level: 'core',
    sections: ['§5', '§6'],
    async run(ctx) {
      const { body } = await deliveryFor(ctx, 'run.started')
      const parsed = parseSignature(body.signature)
      assert(parsed, `signature does not match t=<timestamp>,v1=<hex_digest>: ${String(body.signature)}`)
      for (const hex of parsed.v1)
        assert(isSha256Hex(hex), `v1=${hex} is not a 64-digit lowercase hex SHA-256 digest`)
    },
  },
  {
    id: 'webhooks.signature-verifies',
    title: 'v1 is HMAC-SHA256(secret, "<t>." + JCS(body without signature)) for every delivery',
    level: 'profile',
    sections: ['§5', '§6'],
    async run(ctx) {
      const hook = await ensureWebhook(ctx)
      const { runId } = await approvalRun(ctx)
      await deliveryFor(ctx, 'run.awaiting_approval')
      const mine = ctx.receiver!.deliveries.filter((d) => d.body?.run_id === runId)
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
    sections: ['§5'],
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
    sections: ['§5'],
    async run(ctx) {
      const { delivery, body } = await deliveryFor(ctx, 'run.started')
      const parsed = parseSignature(body.signature)
      assert(parsed, 'signature has the wrong form')
      const skew = Math.abs(Math.floor(delivery.receivedAt / 1000) - Number(parsed.t))
      assert(skew <= 300, `t=${parsed.t} is ${skew} s away from the time the delivery arrived`)
    },
  },
  {
    id: 'webhooks.retried-after-failure',
    title: 'A delivery the receiver answers 500 is retried with the same event id and a fresh signature',
    level: 'profile',
    sections: ['§6'],
    async run(ctx) {
      const hook = await ensureWebhook(ctx)
      const tool = await ctx.fx.tool('succeed')
      const agent = await ctx.fx.newAgent('autonomous', [tool.name])
      const mine = (b: Record<string, unknown> | undefined) =>
        b?.agent_id === agent && b?.event === 'run.started'
      ctx.receiver!.failNext(mine, 1)
      await ctx.fx.startRun(agent)
      const first = await ctx.receiver!.waitFor((d) => mine(d.body), ctx.config.waitMs)
      if (!first) fail('the first run.started delivery never arrived')
      assert(first.status === 500, 'the receiver did not fail the first delivery')
      const retry = await ctx.receiver!.waitFor((d) => d !== first && mine(d.body), ctx.config.waitMs)
      if (!retry) fail(`no retry within ${ctx.config.waitMs} ms after a 500`)
      assert(
        retry.body!.id === first.body!.id,
        `the retry has another event id (${short(retry.body!.id)} vs ${short(first.body!.id)})`,
      )
      const verdict = verifySignature(retry.body!, hook.secret, Math.floor(Date.now() / 1000))
      assert(verdict.ok, `the retry does not verify: ${verdict.reason}`)
    },
  },
  {
    id: 'webhooks.standard-webhooks-headers',
    title:
      'Deliveries carry webhook-id, webhook-timestamp and a verifying webhook-signature (Standard Webhooks)',
    level: 'profile',
    sections: ['§5', '§6'],
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
