/**
 * Tenancy bugs beyond a read by id (spec §5.6): events fanned out to every workspace's subscribers, cursors that
 * page whichever workspace minted them, connector ids shared across workspaces.
 */
import { nextCursor } from '../../src/fixtures.js'
import { signBody } from '../../src/signature.js'
import {
  HOOK_PREFIX,
  header,
  type Json,
  type Mutant,
  type ProxiedRequest,
  parseJson,
  pathOnly,
  query,
} from '../proxy.js'

const CONNECTOR = /^\/v1\/grid\/connectors\/[^/]+\//
/** A seq no check's connector reaches: a since at or past it lies beyond its topic's newest record. */
export const PAST_ANY_HEAD = 100_000
/** Marks a delivery a mutant sent itself, so that its own `delivery` lets it pass. */
export const COPY = 'x-mutant-copy'

interface Subscription {
  authorization: string
  url: string
  secret: string
  events: string[]
}

/**
 * Delivers `body` to the subscription itself, signed afresh under its secret and marked as the mutant's own (COPY),
 * through the proxy like any delivery; a copy that cannot be delivered is dropped.
 */
export async function deliverCopy(sub: Subscription, body: Json): Promise<void> {
  const signed = { ...body, signature: signBody(sub.secret, body, Math.floor(Date.now() / 1000)) }
  await fetch(sub.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [COPY]: '1' },
    body: JSON.stringify(signed),
    signal: AbortSignal.timeout(10_000),
  }).catch(() => undefined)
}

/** Remembers the subscriptions created through the proxy, with the identity that created each. */
export function subscriptions() {
  const all: Subscription[] = []
  return {
    all,
    learn(req: ProxiedRequest): ProxiedRequest {
      if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/webhooks') return req
      const body = parseJson(req.body)
      if (body && typeof body.url === 'string' && typeof body.secret === 'string')
        all.push({
          authorization: header(req, 'authorization') ?? '',
          url: body.url,
          secret: body.secret,
          events: Array.isArray(body.events) ? body.events.map(String) : [],
        })
      return req
    },
  }
}

export function tenancyMutants(): Mutant[] {
  const subs = subscriptions()
  const minted = new Map<string, string>()

  return [
    {
      id: 'webhook-fanout-across-workspaces',
      description:
        'An event goes to every subscription to its kind, whatever the workspace (re-signed under each secret)',
      targets: ['tenancy.webhooks-never-cross-workspaces'],
      request: (req) => subs.learn(req),
      // The copies arrive before the original goes on, so the leak is there by the time the check has seen its
      // own workspace's deliveries, however slow the machine.
      async delivery(req) {
        if (header(req, COPY)) return req
        const body = parseJson(req.body)
        const kind = String(body?.event ?? body?.type)
        const path = pathOnly(req.path).slice(HOOK_PREFIX.length)
        const owner = subs.all.find((s) => s.url.endsWith(path))
        if (!body || !owner) return req
        await Promise.all(
          subs.all
            .filter((s) => s.authorization !== owner.authorization && s.events.includes(kind))
            .map((s) => deliverCopy(s, body)),
        )
        return req
      },
    },
    {
      id: 'cursor-pages-any-workspace',
      description: 'A cursor pages the workspace that minted it, whoever presents it',
      targets: ['tenancy.cursor-stays-in-workspace'],
      request(req) {
        const cursor = query(req.path).get('cursor')
        const minter = cursor ? minted.get(cursor) : undefined
        if (!minter || minter === header(req, 'authorization')) return req
        return { ...req, headers: { ...req.headers, authorization: minter } }
      },
      response(req, res) {
        if (req.method !== 'GET') return res
        const next = nextCursor(parseJson(res.body), res.headers)
        if (next) minted.set(next, header(req, 'authorization') ?? '')
        return res
      },
    },
    {
      id: 'connector-ids-global',
      description:
        'Connector ids are global: every workspace ingests into, reads and streams the first workspace’s connector',
      targets: ['tenancy.connector-id-per-workspace'],
      request(req, ctx) {
        const second = ctx.tokens.secondWorkspace
        if (!second || !CONNECTOR.test(pathOnly(req.path))) return req
        if (header(req, 'authorization') !== `Bearer ${second}`) return req
        return { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` } }
      },
      upgrade(headers, ctx) {
        const second = ctx.tokens.secondWorkspace
        if (!second || headers.authorization !== `Bearer ${second}`) return headers
        return { ...headers, authorization: `Bearer ${ctx.tokens.primary}` }
      },
    },
    {
      id: 'stream-lineage-of-another-batch',
      description: 'Pushed records carry a lineage root that is not their batch’s',
      targets: ['stream.pushed-records-in-order-with-root'],
      streamMessage(message) {
        const record = message.record as Json | undefined
        const lineage = record?.lineage as Json | undefined
        if (!record || !lineage || typeof lineage.batch_root !== 'string') return message
        return { ...message, record: { ...record, lineage: { ...lineage, batch_root: '0'.repeat(64) } } }
      },
    },
    {
      id: 'stream-unsubscribe-keeps-room',
      description:
        "An unsubscribe is acknowledged but keeps the topic's room among the key's topics: the key fills up for good",
      targets: ['stream.key-quotas'],
      clientMessage(message) {
        // The deployment acknowledges a topic it never held and keeps the one the client gave up.
        return message.type === 'unsubscribe' ? { ...message, topics: ['connector:never-held'] } : message
      },
    },
    {
      id: 'stream-resume-inclusive',
      description: 'A resume point is inclusive: the record at since=<seq> is replayed again',
      targets: ['stream.resume-after-seq-exclusive'],
      clientMessage(message) {
        const since = message.since as Record<string, number> | undefined
        if (!since) return message
        return { ...message, since: Object.fromEntries(Object.entries(since).map(([k, v]) => [k, v - 1])) }
      },
    },
    {
      id: 'stream-since-past-head-live',
      description:
        "A since beyond the topic's newest record is taken as no since: the subscriber gets the next records, whose seqs are not after it",
      targets: ['stream.resume-points-apart'],
      clientMessage(message) {
        const since = message.since as Record<string, number> | undefined
        if (!since) return message
        // No check's connector reaches this seq: past it, a since lies beyond the topic's head.
        const kept = Object.entries(since).filter(([, v]) => v < PAST_ANY_HEAD)
        return { ...message, since: Object.fromEntries(kept) }
      },
    },
    (() => {
      // One reading position per topic, moved to its furthest subscriber: the others get nothing before it.
      const ahead = new Map<string, object>()
      return {
        id: 'stream-topic-read-from-furthest',
        description:
          'A topic is read once for its subscribers from the furthest resume point among them: a live subscriber of a topic that another subscriber resumes beyond its head gets nothing',
        targets: ['stream.resume-points-apart'],
        clientMessage(message, connection) {
          const since = message.since as Record<string, number> | undefined
          for (const [topic, seq] of Object.entries(since ?? {}))
            if (seq >= PAST_ANY_HEAD) ahead.set(topic, connection)
          return message
        },
        streamMessage(message, connection) {
          const holder = typeof message.topic === 'string' ? ahead.get(message.topic) : undefined
          return message.type === 'record' && holder !== undefined && holder !== connection
            ? undefined
            : message
        },
      } satisfies Mutant
    })(),
  ]
}
