/**
 * The destinations the checks create (a Slack webhook, a PagerDuty service, a CloudEvents sink, a NATS bus) with the
 * suite's receiver posing as the service, and what the checks read in their deliveries and delivery logs.
 */
import { randomBytes } from 'node:crypto'
import type { CheckContext } from '../../check.js'
import { expectStatus, ownId, pageItems } from '../../fixtures.js'
import { type HttpResponse, obj } from '../../http.js'
import { type Delivery, hostAndPort } from '../../receiver.js'
import { assert, fail, skip } from '../../types.js'
import { short } from '../../wait.js'
import { atTag, receiverUrl } from '../webhooks.js'

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

export interface Sink {
  id: string
  tag: string
  /** The write-only secret it was created with: no answer may show it. */
  secret: string
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
export const ensureSink = (ctx: CheckContext) =>
  cloudEventsSink(ctx, 'cloudevents', ['agent.created'], () => ({ mode: 'binary' }))

/**
 * The destination's delivery log shows a delivery delivered at its first attempt (the answer of the service it posed
 * as counted as success), read a few times while the outcome is written; a problem sentence, or undefined.
 */
export async function deliveredInLog(ctx: CheckContext, sink: Sink): Promise<string | undefined> {
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
export async function secretKept(ctx: CheckContext, sink: Sink): Promise<void> {
  const read = await ctx.http.get(`/v1/destinations/${sink.id}`)
  expectStatus(read, 200, 'GET /v1/destinations/{id}')
  assert(!read.text.includes(sink.secret), 'the destination answer shows its secret')
  const list = await ctx.http.get('/v1/destinations?limit=200')
  expectStatus(list, 200, 'GET /v1/destinations')
  assert(!list.text.includes(sink.secret), 'the destination list shows a secret')
}

/**
 * The delivery log of a destination, read until `want` holds for its entries (bounded by the run's wait); the last
 * entries read.
 */
export async function logUntil(
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
export function retried(entry: Record<string, unknown>): boolean {
  if (entry.status === 'delivered') return false
  return (
    (entry.status === 'pending' && typeof entry.next_attempt_at === 'string') ||
    (typeof entry.attempts === 'number' && entry.attempts > 1)
  )
}

/**
 * `message` names `field` as itself, or one of its items (`config.servers.0`): not as the start of a deeper field
 * (`config.colour.size`) or of a longer name.
 */
export function namesField(message: string, field: string): boolean {
  const escaped = field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return new RegExp(`(^|[^\\w.])${escaped}(?!\\w|\\.[A-Za-z_])`).test(message)
}
