/**
 * The reference profile's own operations beyond the spec's endpoint list (`x-extension` in the contract): the
 * served documents, the webhook subscription list, its delivery log, secret rotation and redelivery, an agent's
 * runs, and GraphQL over HTTP's GET form. The spec names none of them ("Gaps in the endpoint list"), so the check is
 * profile: it shows that each answers what its contract documents, and gives the coverage report their answers.
 */
import { randomBytes } from 'node:crypto'
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { expectStatus, ownId, pageItems } from '../fixtures.js'
import { type HttpResponse, obj } from '../http.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { envelopeProblems } from './assertions.js'
import { batch, ingestAccepted } from './ingest.js'
import { atTag, hookId, ownHook, webhookSecret } from './webhooks.js'

export interface Probe {
  what: string
  expect: number
  send(): Promise<HttpResponse>
  /** What else the answer must show, as a problem sentence (undefined when it is fine). */
  judge?(res: HttpResponse): string | undefined
}

/** Served documents: no token, since documentation and health are read before anyone has a key. */
function documentProbes(ctx: CheckContext): Probe[] {
  const media = (res: HttpResponse, re: RegExp) =>
    re.test(res.headers['content-type'] ?? '') ? undefined : `content-type ${res.headers['content-type']}`
  return [
    { what: 'GET /healthz', expect: 200, send: () => ctx.http.get('/healthz', { token: null }) },
    {
      what: 'GET /openapi.json',
      expect: 200,
      send: () => ctx.http.get('/openapi.json', { token: null }),
      judge: (res) => (typeof obj(res.body).openapi === 'string' ? undefined : 'no "openapi" version field'),
    },
    {
      what: 'GET /schema.graphql',
      expect: 200,
      send: () => ctx.http.get('/schema.graphql', { token: null }),
      judge: (res) => (/\btype Query\b/.test(res.text) ? undefined : 'no `type Query` in the SDL'),
    },
    {
      what: 'GET /docs',
      expect: 200,
      send: () => ctx.http.get('/docs', { token: null }),
      judge: (res) => media(res, /text\/html/),
    },
    {
      what: 'GET /docs/scalar.js',
      expect: 200,
      send: () => ctx.http.get('/docs/scalar.js', { token: null }),
      judge: (res) => media(res, /javascript/),
    },
  ]
}

export interface HookWithDelivery {
  id: string
  deliveryId: string
  /** The event the delivery carries: other checks create agents meanwhile, so this hook gets their events too. */
  eventId: unknown
  tag: string
}

/** A subscription of its own with one delivery in its log, so redelivery and rotation touch nothing shared. */
async function hookWithDelivery(ctx: CheckContext): Promise<HookWithDelivery> {
  const hook = await ownHook(ctx, 'ext-hook', ['agent.created'], { status: [201] })
  const [id, tag] = [hookId(hook), hook.tag]
  await ctx.fx.newAgent()
  await ctx.receiver!.waitFor(hook.mine, ctx.config.waitMs)
  let deliveryId: unknown
  let eventId: unknown
  for (let i = 0; i < 20 && deliveryId === undefined; i++) {
    const log = await ctx.http.get(`/v1/webhooks/${id}/deliveries`)
    expectStatus(log, 200, 'GET /v1/webhooks/{id}/deliveries')
    const first = obj(pageItems(log.body)?.[0])
    deliveryId = first.delivery_id
    eventId = first.event_id
    if (deliveryId === undefined) await new Promise((r) => setTimeout(r, 100))
  }
  assert(typeof deliveryId === 'string', `the delivery log of ${id} lists no delivery with a delivery_id`)
  return { id, deliveryId, eventId, tag }
}

/**
 * Redelivery asked again while the receiver holds the answer to an attempt of the same delivery: the reference
 * refuses it (409 invalid_state) rather than run two attempts of one delivery at once. Whichever attempt is in
 * progress when the first request comes (this one's or the previous probe's), the second request meets one.
 */
export async function redeliverDuringAttempt(
  ctx: CheckContext,
  hook: Omit<HookWithDelivery, 'id'>,
  path: string,
): Promise<HttpResponse> {
  const since = Date.now()
  let release: () => void = () => undefined
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  // An attempt of this delivery: another agent's agent.created reaching the hook meanwhile is no attempt of it.
  const ofDelivery = (body: Record<string, unknown> | undefined, p: string) =>
    atTag(hook.tag)({ path: p }) && (hook.eventId === undefined || body?.id === hook.eventId)
  ctx.receiver!.holdNext(ofDelivery, released)
  try {
    const first = await ctx.http.post(path)
    if (first.status !== 202) return first
    const attempt = await ctx.receiver!.waitFor(
      (d) => ofDelivery(d.body, d.path) && d.receivedAt >= since,
      ctx.config.waitMs,
    )
    if (!attempt)
      fail(
        `no attempt of the redelivered ${hook.deliveryId} reached the receiver within ${ctx.config.waitMs} ms (--wait-ms)`,
      )
    return await ctx.http.post(path)
  } finally {
    release()
  }
}

/**
 * The refusal of a redelivery while an attempt of it is in progress, as the contract's error detail for
 * `invalid_state` documents it (`status`, `action`, `allowed_actions`): the delivery's status, the action refused,
 * and no action allowed until the attempt ends.
 */
export function refusedRedelivery(res: HttpResponse): string | undefined {
  const error = obj(obj(res.body).error)
  const detail = obj(error.detail)
  if (error.code !== 'invalid_state') return `error.code is ${short(error.code)}, not invalid_state`
  if (detail.action !== 'redeliver' || detail.status !== 'pending' || !sameJson(detail.allowed_actions, []))
    return `detail is ${short(detail)}, not the pending delivery's status, action redeliver and no allowed action`
  return undefined
}

/** A redelivery of a delivery the target never had: 404, as any unknown id. */
export function redeliverUnknown(ctx: CheckContext, base: string, label: string): Probe {
  return {
    what: `POST ${label}/deliveries/{unknown id}/redeliver`,
    expect: 404,
    send: () => ctx.http.post(`${base}/deliveries/conf-unknown-delivery/redeliver`),
  }
}

/** A rotation under an Idempotency-Key, then the same key with another secret: 200, then 409. */
function rotationUnderOneKey(
  ctx: CheckContext,
  hookId: string,
  secret: () => { secret: string; overlap_seconds: number },
): Probe[] {
  const headers = { 'idempotency-key': `conf-${randomBytes(9).toString('hex')}` }
  const send = () => ctx.http.post(`/v1/webhooks/${hookId}/rotate-secret`, secret(), { headers })
  return [
    { what: 'POST /v1/webhooks/{id}/rotate-secret with an Idempotency-Key', expect: 200, send },
    { what: 'the same rotation key with another secret', expect: 409, send },
  ]
}

/**
 * A resource with a delivery log deleted, then gone: the DELETE is 204, and afterwards its read, its log and a second
 * delete are 404. `template` names it in the sentences (`/v1/webhooks/{id}`), `path` is the one to send to.
 */
export function deletedThenGoneProbes(ctx: CheckContext, template: string, path: string): Probe[] {
  return [
    { what: `DELETE ${template}`, expect: 204, send: () => ctx.http.delete(path) },
    { what: `GET ${template} once deleted`, expect: 404, send: () => ctx.http.get(path) },
    {
      what: `GET ${template}/deliveries once deleted`,
      expect: 404,
      send: () => ctx.http.get(`${path}/deliveries`),
    },
    { what: `DELETE ${template} once deleted`, expect: 404, send: () => ctx.http.delete(path) },
  ]
}

/** Sends each probe in order; what went wrong, one sentence per probe (an empty list when all answered right). */
export async function runProbes(probes: readonly Probe[]): Promise<string[]> {
  const wrong: string[] = []
  for (const p of probes) {
    const res = await p.send()
    if (res.status !== p.expect) wrong.push(`${p.what} answered ${res.status}, not ${p.expect}`)
    else if (res.status >= 400 && envelopeProblems(res.body).length > 0)
      wrong.push(`${p.what} answered ${res.status} without the envelope: ${envelopeProblems(res.body)[0]}`)
    else {
      const problem = p.judge?.(res)
      if (problem) wrong.push(`${p.what}: ${problem}`)
    }
  }
  return wrong
}

export const extensionChecks: Check[] = [
  {
    id: 'surface.extension-operations',
    title:
      'The profile’s extension operations answer as documented: documents and health, webhook list, delivery log, rotation, redelivery, an agent’s runs, GraphQL over GET',
    level: 'profile',
    clauses: ['S4.11', 'S6.3'],
    async run(ctx) {
      const hook = await hookWithDelivery(ctx)
      const agent = await ctx.fx.agent()
      const secret = () => ({ secret: webhookSecret(), overlap_seconds: 0 })
      const connector = ctx.name('conn-ext')
      const records = batch(ctx, 2)
      await ingestAccepted(ctx, connector, records, 'ingesting two records to read back')
      const listed = (id: string) => (res: HttpResponse) =>
        (pageItems(res.body) ?? []).some((w) => ownId(w, 'webhook') === id)
          ? undefined
          : `${id} is not listed`
      const probes: Probe[] = [
        ...documentProbes(ctx),
        {
          what: 'GET /v1/webhooks',
          expect: 200,
          send: () => ctx.http.get('/v1/webhooks?limit=200'),
          judge: listed(hook.id),
        },
        {
          what: 'POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver',
          expect: 202,
          send: () => ctx.http.post(`/v1/webhooks/${hook.id}/deliveries/${hook.deliveryId}/redeliver`),
        },
        {
          what: 'POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver while an attempt of it is in progress',
          expect: 409,
          send: () =>
            redeliverDuringAttempt(
              ctx,
              hook,
              `/v1/webhooks/${hook.id}/deliveries/${hook.deliveryId}/redeliver`,
            ),
          judge: refusedRedelivery,
        },
        redeliverUnknown(ctx, `/v1/webhooks/${hook.id}`, '/v1/webhooks/{id}'),
        {
          what: 'POST /v1/webhooks/{id}/rotate-secret',
          expect: 200,
          send: () => ctx.http.post(`/v1/webhooks/${hook.id}/rotate-secret`, secret()),
        },
        // §8 "Reuse with a different body yields 409" holds for this POST too: the rotation above, repeated under
        // one key with another secret.
        ...rotationUnderOneKey(ctx, hook.id, secret),
        {
          what: 'POST /v1/webhooks/{unknown id}/rotate-secret with a valid body',
          expect: 404,
          send: () => ctx.http.post('/v1/webhooks/conf-unknown-webhook/rotate-secret', secret()),
        },
        {
          what: 'GET /v1/agents',
          expect: 200,
          send: () => ctx.http.get('/v1/agents?limit=1'),
          judge: (res) =>
            pageItems(res.body)?.length === 1 ? undefined : `no page of one agent: ${short(res.body)}`,
        },
        {
          what: 'GET /v1/grid/connectors/{connector_id}/records',
          expect: 200,
          send: () => ctx.http.get(`/v1/grid/connectors/${connector}/records`),
          judge: (res) =>
            sameJson(
              (pageItems(res.body) ?? []).map((r) => obj(r).id),
              records.map((r) => r.id),
            )
              ? undefined
              : `not the two records ingested: ${short(res.body)}`,
        },
        {
          what: 'GET /v1/agents/{id}/runs',
          expect: 200,
          send: () => ctx.http.get(`/v1/agents/${agent}/runs`),
        },
        {
          what: 'GET /v1/agents/{id}/runs?limit=0',
          expect: 400,
          send: () => ctx.http.get(`/v1/agents/${agent}/runs?limit=0`),
        },
        {
          what: 'GET /v1/graphql?query={__typename}',
          expect: 200,
          send: () => ctx.http.get(`/v1/graphql?query=${encodeURIComponent('{ __typename }')}`),
          judge: (res) => (obj(obj(res.body).data).__typename === 'Query' ? undefined : short(res.body)),
        },
        { what: 'GET /v1/graphql without a query', expect: 400, send: () => ctx.http.get('/v1/graphql') },
        {
          what: 'POST /v1/graphql with a body that is no GraphQL request',
          expect: 400,
          send: () => ctx.http.post('/v1/graphql', { query: 5 }),
        },
      ]
      const wrong = await runProbes(probes)
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
]
