/**
 * Spec §4, §5.3 stream: `{stream_url}/v1/stream` needs a bearer token and a scope per topic; records arrive with
 * lineage as they land. Authentication is checked at the upgrade (core); the subscribe protocol is profile.
 */

import WebSocket from 'ws'
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { tokenName } from '../config.js'
import { expectStatus } from '../fixtures.js'
import { obj, parseBody } from '../http.js'
import { assert, fail, skip } from '../types.js'
import { describeAnswer, sendUpgrade, WEBSOCKET_HANDSHAKE } from '../upgrade-request.js'
import { short, sleep } from '../wait.js'
import { envelopeProblems, expectEnvelope, expectError } from './assertions.js'
import { batch, ingestAccepted } from './ingest.js'

type Json = Record<string, unknown>

export interface Opened {
  ws: WebSocket
  messages: Json[]
  /** The WebSocket pings the deployment sent, counted from the handshake (one may come with its answer). */
  readonly pings: number
  next(match: (m: Json) => boolean, timeoutMs: number): Promise<Json | undefined>
  close(): void
}

/**
 * An upgrade the deployment refused: its HTTP status (or the socket error), its content type and the start of its
 * body.
 */
export interface RefusedUpgrade {
  refused: number | string
  contentType?: string
  body?: string
}

/** The most of a refused upgrade's body that is read. */
const REFUSAL_BODY_BYTES = 4096

/**
 * Tries to open the stream; resolves with the refusal status when the upgrade is refused. `autoPong: false` leaves
 * the server's WebSocket pings unanswered (every client library answers them by itself).
 */
export function connect(
  ctx: CheckContext,
  token: string | null,
  query = '',
  path = '/v1/stream',
  options: { autoPong?: boolean } = {},
): Promise<Opened | RefusedUpgrade> {
  ctx.http.budget.take()
  const url = `${ctx.config.streamUrl}${path}${query}`
  return new Promise((resolve) => {
    const ws = new WebSocket(url, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      handshakeTimeout: ctx.config.timeoutMs,
      autoPong: options.autoPong ?? true,
    })
    ctx.coverage?.watchSocket(ws)
    ctx.opened(ws)
    let pings = 0
    ws.on('ping', () => {
      pings++
    })
    const messages: Json[] = []
    const waiters: Array<() => void> = []
    ws.on('message', (data) => {
      try {
        messages.push(JSON.parse(String(data)) as Json)
      } catch {
        messages.push({ type: 'unparseable', raw: String(data) })
      }
      for (const w of waiters.splice(0)) w()
    })
    ws.once('unexpected-response', (_req, res) => {
      const refused = res.statusCode ?? 'unknown'
      const contentType = res.headers['content-type'] ?? ''
      let body = ''
      const done = () => {
        resolve({ refused, contentType, body })
        ws.terminate()
      }
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        if (body.length < REFUSAL_BODY_BYTES) body += chunk
      })
      res.once('end', done)
      res.once('error', done)
      res.once('close', done)
    })
    ws.once('error', (err) => resolve({ refused: err.message }))
    ws.once('open', () =>
      resolve({
        ws,
        messages,
        get pings() {
          return pings
        },
        async next(match, timeoutMs) {
          const deadline = Date.now() + timeoutMs
          for (;;) {
            const found = messages.find(match)
            if (found) return found
            const left = deadline - Date.now()
            if (left <= 0 || ws.readyState !== WebSocket.OPEN) return undefined
            await new Promise<void>((r) => {
              const t = setTimeout(r, Math.min(left, 250))
              waiters.push(() => {
                clearTimeout(t)
                r()
              })
            })
          }
        },
        close: () => ws.terminate(),
      }),
    )
  })
}

/**
 * How the reference answers a resume from 0 past `records` (`window + 2` of them, `window` the declared replay
 * window), on /v1/stream and in GraphQL subscriptions alike: one `gap` naming a range of seqs, then the ids of the
 * newest `window` records, each once, in order. `what` names the resume in the failure.
 */
export function assertResumedPastWindow(
  what: string,
  gap: Json | undefined,
  replayed: unknown[],
  records: Json[],
  window: number,
): void {
  assert(
    gap?.type === 'gap' &&
      Number.isInteger(gap.from) &&
      Number.isInteger(gap.to) &&
      Number(gap.to) >= Number(gap.from),
    `${what} past ${records.length} records (declared replay window ${window}) announced no gap: ${short(gap)}`,
  )
  const ids = replayed.map(String)
  assert(
    sameJson(
      ids,
      records.slice(2).map((r) => String(r.id)),
    ),
    `after the gap, ${what} replayed ${ids.length} records ${short(ids)}, expected the newest ${window} once each in order`,
  )
}

/** A connector's topic name as the deployment names it (declared `stream.topic`, default `connector:<id>`). */
export function topicOf(ctx: CheckContext, connector: string): string {
  return ctx.config.stream.topic.split('{connector}').join(connector)
}

/**
 * The subscribe message for the given connectors, from the declared `stream.subscribe` template (spec §4: "The
 * messages a client sends to subscribe to stream topics: not shown"): "{topics}" becomes the array of topic names,
 * "{topic}" the first one, "{connector}" the first connector id, wherever they stand as string values.
 */
export function subscribeMessage(ctx: CheckContext, connectors: string[]): string {
  const topics = connectors.map((c) => topicOf(ctx, c))
  const fill = (v: unknown): unknown => {
    if (v === '{topics}') return topics
    if (typeof v === 'string')
      return v
        .split('{topic}')
        .join(topics[0] ?? '')
        .split('{connector}')
        .join(connectors[0] ?? '')
    if (Array.isArray(v)) return v.map(fill)
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)]))
    return v
  }
  return JSON.stringify(fill(ctx.config.stream.subscribe))
}

/** The longest a subscribe waits for the deployment's answer to it (shorter where --wait-ms is). */
const SUBSCRIBE_ANSWER_MS = 5000

/**
 * Sends a subscribe message and waits (bounded) for the deployment's answer to it, whatever it calls it: the next
 * message that names one of the topics (an acknowledgement or a refusal). Not merely the next message: a heartbeat
 * may come first, and records landing before the subscription took effect are not the subscriber's to get. A
 * deployment that answers nothing costs the bound (5 s, or --wait-ms where that is shorter: it bounds every wait
 * for the deployment), then the caller goes on.
 */
export async function subscribed(
  ctx: CheckContext,
  stream: Opened,
  message: string,
  topics: string[],
): Promise<Json | undefined> {
  const timeoutMs = Math.min(SUBSCRIBE_ANSWER_MS, ctx.config.waitMs)
  const before = stream.messages.length
  stream.ws.send(message)
  const names = (m: Json) => {
    const text = JSON.stringify(m)
    return topics.some((t) => text.includes(JSON.stringify(t)))
  }
  return stream.next((m) => stream.messages.indexOf(m) >= before && names(m), timeoutMs)
}

/** Opens the stream with a token, or undefined when the deployment refuses it (the caller skips or fails). */
export async function openStream(ctx: CheckContext, token: string | null): Promise<Opened | undefined> {
  const r = await connect(ctx, token)
  return 'ws' in r ? r : undefined
}

export const streamChecks: Check[] = [
  {
    id: 'stream.requires-token',
    title: 'Opening the stream without a bearer token, or with a bad one, is refused',
    level: 'core',
    clauses: ['S1.12', 'S4.1', 'S5.3'],
    async run(ctx) {
      for (const [what, token] of [
        ['no token', null],
        ['a bad token', 'not-a-token'],
      ] as const) {
        const r = await connect(ctx, token)
        if ('ws' in r) {
          let timer: NodeJS.Timeout | undefined
          const closed = await new Promise<boolean>((resolve) => {
            r.ws.once('close', () => resolve(true))
            timer = setTimeout(() => resolve(false), 1000)
          })
          clearTimeout(timer)
          r.close()
          if (!closed) fail(`the stream opened with ${what} and stayed open`)
        } else if (typeof r.refused === 'number') {
          assert(r.refused === 401, `the upgrade with ${what} was refused with ${r.refused}, not 401`)
        }
      }
    },
  },
  {
    id: 'stream.plain-get-refused',
    title:
      'A plain GET of the stream (no WebSocket upgrade) is refused with the error envelope: 401 without a token, a 4xx with one; an upgrade of an unknown path beside it is refused 404 with the envelope, and one whose request target is no URL a 4xx, the deployment answering on',
    level: 'profile',
    clauses: ['S1.12', 'S5.2'],
    async run(ctx) {
      // §4 lists the stream as "GET (WebSocket)": what a GET without the upgrade gets is not shown. The reference
      // authenticates it like the upgrade (§5 "A missing ... bearer token yields HTTP 401") and refuses it with a
      // token too. That authenticated answer is then judged by sweep.ratelimit-headers-everywhere (core: §8 "Burst
      // and sustained headers are present on every response").
      const url = `${ctx.config.streamUrl.replace(/^ws/, 'http')}/v1/stream`
      expectError(await ctx.http.get(url, { token: null }), 401, 'a plain GET of the stream without a token')
      const withToken = await ctx.http.get(url, { token: ctx.config.tokens.primary })
      assert(
        withToken.status >= 400 && withToken.status < 500,
        `a plain GET of the stream with a valid token answered ${withToken.status}, not a 4xx refusal: ${short(withToken.body)}`,
      )
      expectEnvelope(withToken, 'a plain GET of the stream with a valid token')
      // A WebSocket upgrade with a valid token on a path next to the stream's is no stream: refused like any
      // unknown path (404), never opened.
      const beside = await connect(ctx, ctx.config.tokens.primary, '', '/v1/streams')
      if ('ws' in beside) {
        beside.close()
        fail('a WebSocket upgrade of /v1/streams (no such path) opened a socket')
      }
      assert(
        beside.refused === 404,
        `a WebSocket upgrade of /v1/streams was refused with ${beside.refused}, not 404`,
      )
      // Refused like the HTTP side refuses an unknown path: a JSON body in the §7 envelope.
      assert(
        /^application\/json\b/i.test(beside.contentType ?? ''),
        `the 404 refusing a WebSocket upgrade of /v1/streams came as "${beside.contentType}", not application/json`,
      )
      const problems = envelopeProblems(parseBody(beside.body ?? '', beside.contentType))
      assert(
        problems.length === 0,
        `the 404 refusing a WebSocket upgrade of /v1/streams breaks the error envelope: ${problems.join('; ')}`,
      )
      // A request target that is no URL (an absolute form with a broken host) is a bad request: refused with a 4xx,
      // and the deployment goes on answering. The reference once parsed it unguarded and its process died.
      const authorization = `Bearer ${ctx.config.tokens.primary}`
      const stream = `${ctx.config.streamUrl}/v1/stream`
      const broken = await sendUpgrade(
        ctx,
        stream,
        { ...WEBSOCKET_HANDSHAKE, authorization },
        { target: 'http://[/v1/stream' },
      )
      assert(
        'status' in broken && broken.status >= 400 && broken.status < 500,
        `a WebSocket upgrade whose request target is no URL (http://[/v1/stream) answered ${describeAnswer(broken)}, not a 4xx`,
      )
      const after = await ctx.http.get(url, { token: null })
      assert(
        after.status === 401,
        `after an upgrade whose request target is no URL, a plain GET of the stream answered ${after.status}, not 401`,
      )
    },
  },
  {
    id: 'stream.bad-handshake-refused',
    title:
      'A WebSocket handshake of the stream that RFC 6455 does not allow is refused: a malformed Sec-WebSocket-Key 400 with the envelope naming the header, a version the deployment does not speak a 4xx naming 13 in Sec-WebSocket-Version',
    level: 'profile',
    clauses: ['S1.12', 'S7.1'],
    async run(ctx) {
      const stream = `${ctx.config.streamUrl}/v1/stream`
      const authorization = `Bearer ${ctx.config.tokens.primary}`
      // A handshake RFC 6455 §4.2.1 does not allow (a Sec-WebSocket-Key that is no 16-byte nonce in base64) is a
      // bad request (§4.2.2 "400 Bad Request"): refused like any other, with the envelope.
      const badKey = await sendUpgrade(ctx, stream, {
        ...WEBSOCKET_HANDSHAKE,
        'sec-websocket-key': 'not-a-nonce',
        authorization,
      })
      assert(
        'status' in badKey && badKey.status === 400,
        `a WebSocket handshake of the stream with a malformed Sec-WebSocket-Key answered ${describeAnswer(badKey)}, not 400`,
      )
      const keyRefusal = parseBody(badKey.body, badKey.contentType)
      const keyProblems = envelopeProblems(keyRefusal)
      assert(
        keyProblems.length === 0,
        `the 400 refusing a malformed Sec-WebSocket-Key breaks the error envelope: ${keyProblems.join('; ')}`,
      )
      // Named as the reference names whatever it refuses in a request (its contract's invalid_request detail):
      // an issue whose path is the header at fault (its location, where given, `header`), listed in fields.
      const keyDetail = obj(obj(obj(keyRefusal).error).detail)
      const named = (v: unknown) => String(v).toLowerCase() === 'sec-websocket-key'
      assert(
        Array.isArray(keyDetail.issues) &&
          keyDetail.issues.some(
            (i) =>
              named(obj(i).path) &&
              typeof obj(i).message === 'string' &&
              (obj(i).location === undefined || obj(i).location === 'header'),
          ) &&
          Array.isArray(keyDetail.fields) &&
          keyDetail.fields.some(named),
        `the 400 refusing a malformed Sec-WebSocket-Key does not name the header in its detail's issues and fields: ${short(keyDetail)}`,
      )
      // RFC 6455 §4.4: a version the server does not speak is refused naming, in Sec-WebSocket-Version, the ones it
      // does (13 is the RFC's own).
      const oldVersion = await sendUpgrade(ctx, stream, {
        ...WEBSOCKET_HANDSHAKE,
        'sec-websocket-version': '99',
        authorization,
      })
      assert(
        'status' in oldVersion && oldVersion.status >= 400 && oldVersion.status < 500,
        `a WebSocket handshake of the stream with Sec-WebSocket-Version: 99 answered ${describeAnswer(oldVersion)}, not a 4xx`,
      )
      const spoken = (oldVersion.headers['sec-websocket-version'] ?? '').split(',').map((v) => v.trim())
      assert(
        spoken.includes('13'),
        `the refusal of Sec-WebSocket-Version: 99 names the versions spoken as "${oldVersion.headers['sec-websocket-version'] ?? '(no Sec-WebSocket-Version header)'}", not 13 among them (RFC 6455 §4.4)`,
      )
    },
  },
  {
    id: 'stream.accepts-token',
    title: 'The stream opens with a valid bearer token',
    level: 'core',
    clauses: ['S1.2', 'S1.12'],
    async run(ctx) {
      const r = await connect(ctx, ctx.config.tokens.primary)
      if (!('ws' in r)) fail(`the stream refused the primary token: ${String(r.refused)}`)
      r.close()
    },
  },
  {
    id: 'stream.access-token-query',
    title:
      'The stream opens with the token in the access_token query parameter (RFC 6750 §2.3) and refuses a bad one with 401',
    level: 'profile',
    clauses: ['S5.3'],
    async run(ctx) {
      // §5 names only the Authorization header; a browser's WebSocket cannot set it. The reference's contract takes
      // the token from `access_token` too (RFC 6750 §2.3), the way browsers' clients send it.
      const query = (token: string) => `?access_token=${encodeURIComponent(token)}`
      const r = await connect(ctx, null, query(ctx.config.tokens.primary))
      if (!('ws' in r)) fail(`the stream refused the primary token in access_token: ${String(r.refused)}`)
      r.close()
      const bad = await connect(ctx, null, query('not-a-token'))
      if ('ws' in bad) {
        bad.close()
        fail('the stream opened with a bad token in access_token')
      }
      assert(bad.refused === 401, `a bad token in access_token was refused with ${bad.refused}, not 401`)
    },
  },
  // Before the other checks that wait for a pushed record: a deployment that pushes none fails this core check
  // first, and under --bail the run ends there instead of waiting out each of the others.
  {
    id: 'stream.pushed-records-in-order-with-root',
    title:
      'Pushed records arrive as they land: every record once, in commit order, each carrying its batch’s lineage_root',
    level: 'core',
    clauses: ['S4.10', 'S1.6', 'S2.11'],
    // It waits for a duplicate that must not come, on a connector of its own.
    overlap: true,
    async run(ctx) {
      // §4 "The server pushes records, with lineage, as they land." The lineage the spec names is the batch's
      // `lineage_root` (§2 Batch ingest response): each pushed record must carry its own batch's root. The
      // message's shape and the subscribe message are the deployment's (declared as stream.subscribe).
      const connector = ctx.name('conn-order')
      const r = await openStream(ctx, ctx.config.tokens.primary)
      if (!r) fail('the stream refused the primary token')
      try {
        await subscribed(ctx, r, subscribeMessage(ctx, [connector]), [topicOf(ctx, connector)])
        const carrying = (id: string) => (m: Json) => JSON.stringify(m).includes(`"${id}"`)
        // A positive control first: one record pushed shows the subscription has taken effect (a deployment may
        // not acknowledge, or acknowledge late on a loaded machine), so no judged record can land before it.
        const [probe] = batch(ctx, 1)
        await ingestAccepted(ctx, connector, [probe!])
        const live = await r.next(carrying(String(probe!.id)), ctx.config.waitMs)
        const silent = `no ingested record reached the subscriber within ${ctx.config.waitMs} ms`
        // Declared, the subscribe message is the deployment's own word: silence is its failure, not the suite's guess.
        if (!live && ctx.config.stream.declared)
          fail(
            `${silent}, subscribed with the declared stream.subscribe (sent: ${subscribeMessage(ctx, [connector])})`,
          )
        if (!live)
          skip(
            `${silent}: declare the subscribe message and topic names (stream.subscribe, stream.topic in --config; sent: ${subscribeMessage(ctx, [connector])})`,
          )
        const batches = [batch(ctx, 3), batch(ctx, 2)]
        const roots: string[] = []
        for (const records of batches) {
          const res = await ingestAccepted(ctx, connector, records)
          const root = (res.body as Json | undefined)?.lineage_root
          if (typeof root !== 'string') fail(`the batch answer has no lineage_root: ${short(res.body)}`)
          roots.push(root)
        }
        const ids = batches.flat().map((rec) => String(rec.id))
        await r.next(carrying(ids[ids.length - 1]!), ctx.config.waitMs)
        await sleep(300) // a duplicate pushed right after would show now
        const positions = ids.map((id) => r.messages.findIndex(carrying(id)))
        const lost = ids.filter((_, i) => positions[i] === -1)
        assert(lost.length === 0, `records never pushed: ${lost.join(', ')}`)
        const twice = ids.filter((id) => r.messages.filter(carrying(id)).length > 1)
        assert(twice.length === 0, `records pushed more than once: ${twice.join(', ')}`)
        assert(
          positions.every((p, i) => i === 0 || p > positions[i - 1]!),
          `records pushed out of commit order: ${ids.map((id, i) => `${id}@${positions[i]}`).join(', ')}`,
        )
        // §2 types lineage_root "string" and shows no form: the same root written with or without an algorithm
        // prefix ("sha256:<hex>") on either side, in either letter case, is the same root.
        const digest = (root: string) => root.replace(/^[A-Za-z0-9_-]+[:=]/, '').toLowerCase()
        batches.forEach((records, b) => {
          for (const rec of records) {
            const m = r.messages.find(carrying(String(rec.id)))!
            assert(
              JSON.stringify(m).toLowerCase().includes(digest(roots[b]!)),
              `the pushed record ${String(rec.id)} does not carry its batch's lineage_root ${roots[b]}: ${short(m)}`,
            )
          }
        })
      } finally {
        r.close()
      }
    },
  },
  {
    id: 'stream.subscriber-outlives-another',
    title:
      'Two subscribers of one topic both receive its records; once one disconnects, the other still receives the next',
    level: 'core',
    clauses: ['S4.10'],
    // Mostly waiting for pushes on a connector of its own.
    overlap: true,
    async run(ctx) {
      // §4 "The server pushes records, with lineage, as they land" to a subscriber: whoever else subscribed to the
      // same topic, and left it, is no part of that. A server that reads a topic once for all its subscribers must
      // still wake the readers of those who stay.
      const connector = ctx.name('conn-shared')
      const subscribe = subscribeMessage(ctx, [connector])
      const stays = await openStream(ctx, ctx.config.tokens.primary)
      if (!stays) fail('the stream refused the primary token')
      const leaves = await openStream(ctx, ctx.config.tokens.primary)
      try {
        if (!leaves) fail('the stream refused the primary token a second connection')
        await Promise.all([
          subscribed(ctx, stays, subscribe, [topicOf(ctx, connector)]),
          subscribed(ctx, leaves, subscribe, [topicOf(ctx, connector)]),
        ])
        const ingest = async (step: string) => {
          const [record] = batch(ctx, 1)
          await ingestAccepted(ctx, connector, [record!], `ingest ${step}`)
          const id = String(record!.id)
          return (m: Json) => JSON.stringify(m).includes(`"${id}"`)
        }
        const first = await ingest('while both are subscribed')
        const [a, b] = await Promise.all([
          stays.next(first, ctx.config.waitMs),
          leaves.next(first, ctx.config.waitMs),
        ])
        const silent = `a record reached ${a ? 'one' : 'neither'} of two subscribers within ${ctx.config.waitMs} ms`
        if (!(a && b) && ctx.config.stream.declared)
          fail(`${silent}, both subscribed with the declared stream.subscribe (sent: ${subscribe})`)
        if (!(a && b))
          skip(
            `${silent}: declare the subscribe message and topic names (stream.subscribe, stream.topic in --config; sent: ${subscribe})`,
          )
        leaves.close()
        await sleep(200) // the server hears of the close
        const next = await ingest('after the other subscriber disconnected')
        const got = await stays.next(next, ctx.config.waitMs)
        assert(
          got,
          `once the other subscriber of ${topicOf(ctx, connector)} disconnected, the next record did not reach the one still subscribed within ${ctx.config.waitMs} ms`,
        )
      } finally {
        stays.close()
        leaves?.close()
      }
    },
  },
  {
    id: 'stream.topic-scope-enforced',
    title: 'A token without a topic scope never receives that topic: records reach a scoped subscriber only',
    level: 'core',
    clauses: ['S5.3'],
    // Mostly waiting on the deployment's clock on resources of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx) {
      const narrow = ctx.as('narrowScope').token
      if (!narrow) skip(`no ${tokenName('narrowScope')} given`)
      const connector = ctx.name('conn-scoped')
      const subscribe = subscribeMessage(ctx, [connector])
      const scoped = await connect(ctx, ctx.config.tokens.primary)
      if (!('ws' in scoped)) fail(`the stream refused the primary token: ${String(scoped.refused)}`)
      const unscoped = await connect(ctx, narrow)
      try {
        // Any answer to the subscription (its names are the deployment's), or a short pause, before ingesting.
        await Promise.all([
          subscribed(ctx, scoped, subscribe, [topicOf(ctx, connector)]),
          'ws' in unscoped ? subscribed(ctx, unscoped, subscribe, [topicOf(ctx, connector)]) : null,
        ])
        const [record] = batch(ctx, 1)
        const res = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, { records: [record] })
        expectStatus(res, 202, 'ingest')
        const id = String(record!.id)
        const carries = (m: Json) => JSON.stringify(m).includes(id)
        // The scoped subscriber shows the record is on the wire; without it this check would prove nothing.
        const seen = await scoped.next(carries, ctx.config.waitMs)
        if (!seen && ctx.config.stream.declared)
          fail(
            `the primary subscriber never received the record within ${ctx.config.waitMs} ms, subscribed with the declared stream.subscribe (§4 "The server pushes records, with lineage, as they land"; sent: ${subscribe})`,
          )
        if (!seen)
          skip(
            `the primary subscriber never received the record, so the narrow token's silence proves nothing: declare the subscribe message and topic names (stream.subscribe, stream.topic in --config; sent: ${subscribe})`,
          )
        if ('ws' in unscoped) {
          const leaked = await unscoped.next(carries, 1000)
          assert(!leaked, `a token without the topic's scope received its record: ${short(leaked)}`)
        }
      } finally {
        scoped.close()
        if ('ws' in unscoped) unscoped.close()
      }
    },
  },
  {
    id: 'stream.topic-scope-refused',
    title:
      'Subscribing to a topic without its scope is refused with a policy_denied error; the connection stays open',
    level: 'profile',
    clauses: ['S5.3'],
    async run(ctx) {
      const r = await connect(ctx, ctx.as('narrowScope').token ?? null)
      if (!('ws' in r)) fail(`the narrow token could not open the stream: ${String(r.refused)}`)
      try {
        r.ws.send(JSON.stringify({ type: 'subscribe', topics: [`connector:${ctx.name('conn-denied')}`] }))
        const m = await r.next((x) => x.type === 'error' || x.type === 'subscribed', ctx.config.waitMs)
        assert(m?.type === 'error', `expected an error message, got ${short(m)}`)
        assert(short(m).includes('policy_denied'), `the refusal is not policy_denied: ${short(m)}`)
        r.ws.send(JSON.stringify({ type: 'ping' }))
        const pong = await r.next((x) => x.type === 'pong', 3000)
        assert(pong, 'the connection did not answer ping after the refusal')
      } finally {
        r.close()
      }
    },
  },
  {
    id: 'stream.records-with-lineage',
    title: 'A subscriber to connector:<id> receives ingested records as they land, in order, with lineage',
    level: 'profile',
    clauses: ['S1.2', 'S1.6', 'S4.10'],
    async run(ctx) {
      const connector = ctx.name('conn-live')
      const r = await connect(ctx, ctx.config.tokens.primary)
      if (!('ws' in r)) fail(`the stream refused the primary token: ${String(r.refused)}`)
      try {
        r.ws.send(JSON.stringify({ type: 'subscribe', topics: [`connector:${connector}`] }))
        const ok = await r.next((x) => x.type === 'subscribed' || x.type === 'error', ctx.config.waitMs)
        assert(ok?.type === 'subscribed', `subscribe answered ${short(ok)}`)
        const records = batch(ctx, 2)
        const res = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, { records })
        expectStatus(res, 202, 'ingest')
        for (const [i, rec] of records.entries()) {
          const m = await r.next(
            (x) => x.type === 'record' && (x.record as Json | undefined)?.id === rec.id,
            ctx.config.waitMs,
          )
          assert(m, `record ${i} did not arrive on the stream`)
          assert(
            m.topic === `connector:${connector}` && Number.isInteger(m.seq),
            `record message lacks topic/seq: ${short(m)}`,
          )
          const lineage = (m.record as Json).lineage as Json | undefined
          assert(
            lineage && typeof lineage.leaf_hash === 'string' && typeof lineage.batch_root === 'string',
            `no lineage: ${short(m)}`,
          )
        }
        const seqs = r.messages.filter((x) => x.type === 'record').map((x) => Number(x.seq))
        assert(
          seqs.every((s, i) => i === 0 || s > seqs[i - 1]!),
          `record seqs out of order: ${seqs.join(',')}`,
        )
      } finally {
        r.close()
      }
    },
  },
  {
    id: 'stream.resume-after-seq-exclusive',
    title:
      'Subscribing again with since=<seq of a record> replays what came after it, never it, each record once',
    level: 'profile',
    clauses: ['S4.10'],
    async run(ctx) {
      const connector = ctx.name('conn-resume')
      const topic = `connector:${connector}`
      const records = batch(ctx, 3)
      const first = await openStream(ctx, ctx.config.tokens.primary)
      if (!first) fail('the stream refused the primary token')
      let seq: number
      try {
        await subscribed(ctx, first, JSON.stringify({ type: 'subscribe', topics: [topic] }), [topic])
        await ingestAccepted(ctx, connector, records)
        const m = await first.next(
          (x) => x.type === 'record' && (x.record as Json | undefined)?.id === records[0]!.id,
          ctx.config.waitMs,
        )
        assert(m && Number.isInteger(m.seq), `the first record arrived without a seq: ${short(m)}`)
        seq = Number(m.seq)
        await first.next((x) => (x.record as Json | undefined)?.id === records[2]!.id, ctx.config.waitMs)
      } finally {
        first.close()
      }
      const again = await openStream(ctx, ctx.config.tokens.primary)
      if (!again) fail('the stream refused the primary token')
      try {
        const ack = await subscribed(
          ctx,
          again,
          JSON.stringify({ type: 'subscribe', topics: [topic], since: { [topic]: seq } }),
          [topic],
        )
        assert(
          ack?.type === 'subscribed' && ack.topic === topic,
          `subscribing again with since answered ${short(ack)}, not subscribed to ${topic}`,
        )
        await again.next((x) => (x.record as Json | undefined)?.id === records[2]!.id, ctx.config.waitMs)
        await sleep(200)
        const got = again.messages
          .filter((x) => x.type === 'record')
          .map((x) => String((x.record as Json | undefined)?.id))
        assert(
          sameJson(got, [records[1]!.id, records[2]!.id]),
          `resuming after the first record's seq ${seq} replayed ${short(got)}, expected the two after it once each`,
        )
      } finally {
        again.close()
      }
    },
  },
  {
    id: 'stream.resume-points-apart',
    title:
      'Two subscribers of one topic, one live and one with a since beyond its newest record, whichever subscribed first: the live one gets each next record once, in order, and the other none of them (their seqs are not after its since)',
    level: 'profile',
    clauses: ['S4.10'],
    // Mostly waiting for pushes on connectors of its own.
    overlap: true,
    async run(ctx) {
      // A server that reads a topic once for all its subscribers keeps one reading position: subscribers starting
      // at different points must each still get what follows their own point, and nothing before it.
      const problems = await Promise.all([
        resumePointsApart(ctx, 'ahead-first'),
        resumePointsApart(ctx, 'live-first'),
      ])
      const found = problems.flat()
      assert(found.length === 0, found.join('; '))
    },
  },
]

/** A `since` beyond any seq a check's connector reaches, and within GraphQL's Int (graphql.ws-resume-points-apart). */
export const FAR_SINCE = 1_000_000_000

/**
 * One connector, a live subscriber and one resuming beyond its head, subscribed in the given order; three records
 * ingested one at a time, each awaited at the live subscriber. The problems found.
 */
async function resumePointsApart(ctx: CheckContext, order: 'ahead-first' | 'live-first'): Promise<string[]> {
  const connector = ctx.name(`conn-apart-${order}`)
  const topic = `connector:${connector}`
  const live = await openStream(ctx, ctx.config.tokens.primary)
  if (!live) fail('the stream refused the primary token')
  const ahead = await openStream(ctx, ctx.config.tokens.primary)
  try {
    if (!ahead) fail('the stream refused the primary token a second connection')
    const subscribeLive = () =>
      subscribed(ctx, live, JSON.stringify({ type: 'subscribe', topics: [topic] }), [topic])
    const subscribeAhead = () =>
      subscribed(
        ctx,
        ahead,
        JSON.stringify({ type: 'subscribe', topics: [topic], since: { [topic]: FAR_SINCE } }),
        [topic],
      )
    const acks =
      order === 'ahead-first'
        ? [await subscribeAhead(), await subscribeLive()]
        : [await subscribeLive(), await subscribeAhead()].reverse()
    const [aheadAck, liveAck] = acks
    assert(
      aheadAck?.type === 'subscribed' && liveAck?.type === 'subscribed',
      `(${order}) subscribing answered ${short(liveAck)} live and ${short(aheadAck)} with since ${FAR_SINCE}`,
    )
    const ids: string[] = []
    const problems: string[] = []
    for (let i = 0; i < 3; i++) {
      const [record] = batch(ctx, 1)
      const id = String(record!.id)
      ids.push(id)
      await ingestAccepted(ctx, connector, [record!], `ingest record ${i + 1}`)
      const got = await live.next((m) => m.type === 'record' && recordId(m) === id, ctx.config.waitMs)
      if (!got) {
        problems.push(
          `(${order}) record ${i + 1} of 3 did not reach the live subscriber within ${ctx.config.waitMs} ms, while another subscriber of ${topic} waits beyond seq ${FAR_SINCE}`,
        )
        break
      }
    }
    await sleep(200) // a duplicate, or a record the other should not get, would show now
    const liveGot = live.messages.filter((m) => m.type === 'record').map(recordId)
    if (problems.length === 0 && !sameJson(liveGot, ids))
      problems.push(
        `(${order}) the live subscriber got ${short(liveGot)}, expected ${short(ids)} once each in order`,
      )
    const aheadGot = ahead.messages.filter((m) => m.type === 'record').map(recordId)
    if (aheadGot.length > 0)
      problems.push(
        `(${order}) the subscriber with since ${FAR_SINCE} got ${short(aheadGot)}, records whose seqs are not after it`,
      )
    return problems
  } finally {
    live.close()
    ahead?.close()
  }
}

function recordId(m: Json): string {
  return String((m.record as Json | undefined)?.id)
}
