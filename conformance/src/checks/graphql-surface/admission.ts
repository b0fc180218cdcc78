/** Who a graphql-ws socket admits: the key's connection slots, its rate limit, and its authentication. */
import type { Check, CheckContext } from '../../check.js'
import { tokenName } from '../../config.js'
import { expectStatus } from '../../fixtures.js'
import { obj } from '../../http.js'
import { assert, fail, skip } from '../../types.js'
import { short, sleep } from '../../wait.js'
import { declaredSurface, socketUrl } from '../graphql.js'
import { batch } from '../ingest.js'
import { QUOTA_LANE } from '../quotas.js'
import { LIMITED_LANE, SOCKET_OPERATIONS_PAST_LIMIT } from '../ratelimit.js'
import { connect, type Opened, type RefusedUpgrade } from '../stream.js'
import { type Json, UNKNOWN_TOKEN, wsErrorsOf } from './answers.js'
import { type GqlSocket, openGql, payloadsOf } from './socket.js'

/**
 * Fills the key's connection slots with graphql-ws sockets (the token at the upgrade) until one is refused, then
 * asks once more with the token in connection_init, whose close names the quota, its limit and its use. Starts again
 * (within `waitMs`) while that use counts more sockets than were opened: slots of sockets an earlier check closed
 * may still be held for a moment. Any other answer is returned at once, for the check to judge.
 */
async function fillGqlSlots(
  ctx: CheckContext,
  url: string,
  token: string,
  most: number,
): Promise<{ open: GqlSocket[]; refusal?: GqlSocket; closedByInit?: GqlSocket }> {
  const deadline = Date.now() + ctx.config.waitMs
  for (;;) {
    const open: GqlSocket[] = []
    let refusal: GqlSocket | undefined
    while (!refusal && open.length < most) {
      const s = await openGql(ctx, url, token)
      // A socket neither acknowledged nor refused within the time-out ends the filling too: the check fails on it.
      if (s.refused !== undefined || s.closed || !s.messages.some((m) => m.type === 'connection_ack'))
        refusal = s
      else open.push(s)
    }
    if (!refusal) return { open }
    const byInit = await openGql(ctx, url, null, { authorization: `Bearer ${token}` })
    await byInit.next(() => false, ctx.config.timeoutMs)
    const used = Number(/ used=(\d+)$/.exec(byInit.closed?.reason ?? '')?.[1])
    // Only a quota refusal counting more sockets than these is worth a second try; anything else is judged now.
    const stale = refusal.refused === 403 && Number.isInteger(used) && used > open.length
    if (!stale || Date.now() >= deadline) return { open, refusal, closedByInit: byInit }
    for (const s of open) s.ws.terminate()
    await sleep(200)
  }
}

export const wsKeyQuotas: Check = {
  id: 'graphql.ws-key-quotas',
  lane: QUOTA_LANE,
  title:
    "graphql-ws sockets and subscriptions count against the key's stream bounds with its /v1/stream connections and topics: past stream_sockets_per_key an upgrade is refused 403 (a token in connection_init closes 4403 naming the quota), past stream_subscriptions_per_key a subscription errors quota_exceeded while a query is still answered (it holds no topic, and its end frees none); completing a subscription or closing a socket gives the room back, its topics too",
  level: 'profile',
  clauses: ['S4.15', 'S5.3'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const token = ctx.config.tokens.quotaLimited
    if (!token) skip(`no ${tokenName('quotaLimited')} given`)
    const limited = ctx.as('quotaLimited')
    // A record to replay: a subscription taken with since: 0 answers with it at once, one refused with an error.
    const connector = ctx.name('gql-quota')
    expectStatus(
      await limited.post(`/v1/grid/connectors/${connector}/ingest`, { records: batch(ctx, 1) }),
      202,
      'ingesting a record with the quota-limited key',
    )
    const most = 10
    const { open, refusal, closedByInit } = await fillGqlSlots(ctx, url, token, most)
    const streams: Opened[] = []
    try {
      // The quota-limited identity is one whose key holds a few stream connections (conformance/README.md): one
      // that took ten and was refused none keeps no such bound, which is the difference this check reports.
      if (!refusal)
        fail(
          `the quota-limited key opened ${most} graphql-ws sockets and none was refused: no stream_sockets_per_key bound (the identity's key is to hold a few)`,
        )
      const n = open.length
      assert(
        refusal.refused === 403,
        `with ${n} sockets open, the next upgrade was ${refusal.refused ?? (refusal.closed ? `closed ${refusal.closed.code}` : 'neither acknowledged nor refused')}, not refused 403`,
      )
      assert(
        closedByInit?.closed?.code === 4403 &&
          closedByInit.closed.reason === `quota_exceeded: stream_sockets_per_key limit=${n} used=${n}`,
        `with ${n} sockets open, one whose token came in connection_init ${closedByInit?.closed ? `closed ${closedByInit.closed.code} ${short(closedByInit.closed.reason)}` : 'stayed open'}, not 4403 "quota_exceeded: stream_sockets_per_key limit=${n} used=${n}"`,
      )
      // The stream counts against the same slots.
      const stream = await connect(ctx, token)
      if ('ws' in stream) {
        streams.push(stream)
        fail(`with the key's ${n} slots taken by graphql-ws sockets, a /v1/stream upgrade opened`)
      }
      assert(
        stream.refused === 403,
        `a /v1/stream upgrade past the key's slots was refused ${stream.refused}, not 403`,
      )

      // Subscriptions until one is refused (at most 20), each answered at once by the replayed record.
      const s = open[0] as GqlSocket
      const subscribe = async (id: string, socket = s) => {
        socket.send({
          id,
          type: 'subscribe',
          payload: {
            query: 'subscription($c: ID!) { connectorRecords(connector_id: $c, since: 0) { seq } }',
            variables: { c: connector },
          },
        })
        return socket.next((m) => m.id === id && (m.type === 'next' || m.type === 'error'), ctx.config.waitMs)
      }
      const taken: string[] = []
      let refused: Json | undefined
      for (let i = 0; i < 20 && !refused; i++) {
        const answer = await subscribe(`q${i}`)
        if (answer?.type === 'next') taken.push(`q${i}`)
        else refused = answer ?? { type: 'nothing' }
      }
      if (!refused)
        fail(
          "the quota-limited key held 20 subscriptions and none was refused: no stream_subscriptions_per_key bound (the identity's key is to hold a few topics)",
        )
      const ext = obj(obj((Array.isArray(refused.payload) ? refused.payload : [])[0]).extensions)
      assert(
        refused.type === 'error' &&
          ext.code === 'quota_exceeded' &&
          obj(ext.detail).quota === 'stream_subscriptions_per_key' &&
          obj(ext.detail).limit === taken.length,
        `with ${taken.length} subscriptions held, the next was answered ${short(refused)}, not an error quota_exceeded {quota: stream_subscriptions_per_key, limit: ${taken.length}}`,
      )
      // A query over the same socket holds no topic: it is answered while every topic is held, and its end frees
      // none (graphql-ws ends a query with the same `complete` a finished subscription gets).
      s.send({ id: 'query', type: 'subscribe', payload: { query: '{ agents(limit: 1) { next_cursor } }' } })
      const query = await s.next(
        (m) => m.id === 'query' && (m.type === 'next' || m.type === 'error'),
        ctx.config.waitMs,
      )
      assert(
        query?.type === 'next' && obj(query.payload).errors === undefined,
        `with the key's ${taken.length} topics held, a query over the same socket was answered ${short(query)}, not its data: a query holds no topic`,
      )
      await s.next((m) => m.id === 'query' && m.type === 'complete', ctx.config.waitMs)
      const beyond = await subscribe('after-query')
      assert(
        beyond?.type === 'error',
        `after a query over the socket ended, a subscription beyond the key's ${taken.length} topics was answered ${short(beyond)}: the query's end gave back a topic it never held`,
      )
      // Completing one gives its room back.
      s.send({ id: taken[0], type: 'complete' })
      let again: Json | undefined
      // The room may come back a moment after the complete: a few tries, each answered at once.
      for (let i = 0; i < 10 && again?.type !== 'next'; i++) {
        again = await subscribe(`again${i}`)
        if (!again) break
      }
      assert(
        again?.type === 'next',
        `after completing a subscription, a new one was answered ${short(again)}`,
      )
      // Closing a socket gives its slot back: the stream opens.
      ;(open.pop() as GqlSocket).ws.terminate()
      const deadline = Date.now() + ctx.config.waitMs
      let last: Opened | RefusedUpgrade | undefined
      while (Date.now() < deadline) {
        last = await connect(ctx, token)
        if ('ws' in last) {
          streams.push(last)
          break
        }
        await sleep(100)
      }
      assert(
        last && 'ws' in last,
        `after a graphql-ws socket closed, /v1/stream was still refused: ${short(last)}`,
      )
      // Closing the socket that holds the key's topics gives them back: a subscription on a new socket is answered.
      s.ws.terminate()
      open.shift()
      let freed: Json | undefined
      while (Date.now() < deadline + ctx.config.waitMs && freed?.type !== 'next') {
        const g = await openGql(ctx, url, token)
        open.push(g)
        if (g.messages.some((m) => m.type === 'connection_ack')) freed = await subscribe('freed', g)
        if (freed?.type !== 'next') {
          ;(open.pop() as GqlSocket).ws.terminate()
          await sleep(100)
        }
      }
      assert(
        freed?.type === 'next',
        `after the socket holding the key's topics closed, a subscription on a new socket was answered ${short(freed)}, not its record: the closed socket's topics were not given back`,
      )
    } finally {
      for (const g of open) g.ws.terminate()
      for (const st of streams) st.close()
    }
  },
}

export const wsRateLimited: Check = {
  id: 'graphql.ws-rate-limited',
  lane: LIMITED_LANE,
  title:
    "Each operation over graphql-ws counts against its workspace's rate limit as a request does: past it, an operation is answered an error rate_limited (status 429) and the socket stays open",
  level: 'profile',
  clauses: ['S8.5', 'S8.9'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const token = ctx.config.tokens.rateLimited
    if (!token) skip(`no ${tokenName('rateLimited')} given`)
    const most = SOCKET_OPERATIONS_PAST_LIMIT
    const s = await openGql(ctx, url, token)
    try {
      let refusal: Json | undefined
      let answered = 0
      for (let i = 0; i < most && !refusal; i++) {
        s.send({ id: `op${i}`, type: 'subscribe', payload: { query: '{ __typename }' } })
        const m = await s.next(
          (x) => x.id === `op${i}` && (x.type === 'next' || x.type === 'error'),
          ctx.config.waitMs,
        )
        if (!m) fail(`operation ${i + 1} over graphql-ws was answered nothing within ${ctx.config.waitMs} ms`)
        const errors = wsErrorsOf(m)
        if (errors.length > 0) refusal = errors[0]
        else answered += 1
      }
      if (!refusal)
        fail(
          `${most} operations over one graphql-ws socket of the small-limit workspace were all answered: none counted against its rate limit`,
        )
      const ext = obj(refusal.extensions)
      assert(
        ext.code === 'rate_limited' &&
          ext.status === 429 &&
          typeof ext.request_id === 'string' &&
          ext.request_id !== '',
        `after ${answered} answered operations, one was refused with ${short(refusal)}, not rate_limited (status 429) with a request id`,
      )
      assert(!s.closed, `the socket closed after a rate-limited operation: ${short(s.closed)}`)
    } finally {
      s.ws.terminate()
    }
  },
}

export const wsAuthentication: Check = {
  id: 'graphql.ws-authentication',
  title:
    'graphql-ws takes the token at the upgrade (header or access_token) or in connection_init; an unknown one is 401 at the upgrade, none at all (or a connection_init authorization that is no text) closes 4401; an empty access_token is none, leaving the token to connection_init; the protocol’s refusals close with its codes (4429, 4409, 4400)',
  level: 'profile',
  clauses: ['S4.15', 'S5.1'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const primary = ctx.config.tokens.primary
    const unknown = await openGql(ctx, url, UNKNOWN_TOKEN)
    assert(
      unknown.refused === 401,
      `an upgrade with an unknown token was ${unknown.refused ?? 'accepted'}, not 401`,
    )
    const badQuery = await openGql(ctx, url, null, {}, `?access_token=${UNKNOWN_TOKEN}`)
    assert(badQuery.refused === 401, `an unknown access_token was ${badQuery.refused ?? 'accepted'}, not 401`)
    const none = await openGql(ctx, url, null, {})
    await none.next(() => false, ctx.config.timeoutMs)
    assert(
      none.closed?.code === 4401 && !none.messages.some((m) => m.type === 'connection_ack'),
      `a socket with no token anywhere ${none.closed ? `closed with ${none.closed.code}` : 'stayed open'} (messages ${short(none.messages)}), not 4401`,
    )
    const badInit = await openGql(ctx, url, null, { authorization: `Bearer ${UNKNOWN_TOKEN}` })
    await badInit.next(() => false, ctx.config.timeoutMs)
    assert(
      badInit.closed?.code === 4401 && !badInit.messages.some((m) => m.type === 'connection_ack'),
      `connection_init with an unknown token: ${badInit.closed ? `closed with ${badInit.closed.code}` : 'stayed open'}, not 4401`,
    )
    // An authorization that is no text carries no token: the socket is closed as one without any.
    const oddInit = await openGql(ctx, url, null, { authorization: 12345 })
    await oddInit.next(() => false, ctx.config.timeoutMs)
    assert(
      oddInit.closed?.code === 4401 && !oddInit.messages.some((m) => m.type === 'connection_ack'),
      `connection_init whose authorization is the number 12345: ${oddInit.closed ? `closed with ${oddInit.closed.code}` : 'stayed open'}, not 4401`,
    )
    // The 4401's reason is the message REST's 401 gives the same credentials (none, an unknown token).
    for (const [what, socket, token] of [
      ['no token anywhere', none, null],
      ['connection_init with an unknown token', badInit, UNKNOWN_TOKEN],
      ['connection_init whose authorization is a number', oddInit, null],
    ] as const) {
      const rest = obj(obj((await ctx.http.get('/v1/agents?limit=1', { token })).body).error).message
      assert(
        typeof rest === 'string' && socket.closed?.reason === rest,
        `${what}: the 4401's reason is ${short(socket.closed?.reason)}, REST's 401 says ${short(rest)}`,
      )
    }
    // The upgrade of another path is no GraphQL socket: an unknown one is 404, /v1/stream is the stream's.
    const elsewhere = await openGql(ctx, url, primary, {}, '/x')
    assert(
      elsewhere.refused === 404,
      `an upgrade of ${socketUrl(url, '/x')} was ${elsewhere.refused ?? 'accepted'}, not 404`,
    )
    // A message over 256 KiB closes the socket (1009, message too big).
    const big = await openGql(ctx, url, primary)
    big.send({
      id: 'big',
      type: 'subscribe',
      payload: { query: `{ __typename } # ${'x'.repeat(300 * 1024)}` },
    })
    await big.next(() => false, ctx.config.timeoutMs)
    assert(
      big.closed?.code === 1009,
      `a 300 KiB message ${big.closed ? `closed the socket with ${big.closed.code}` : 'left it open'}, not 1009`,
    )
    // graphql-transport-ws's own refusals close the socket with its codes: a second connection_init 4429, a
    // subscribe whose id a running subscription holds 4409, a message of no known type 4400.
    const subscribe = {
      id: 'held',
      type: 'subscribe',
      payload: {
        query: 'subscription($c: ID!) { connectorRecords(connector_id: $c) { seq } }',
        variables: { c: ctx.name('held') },
      },
    }
    for (const [what, messages, code] of [
      ['a second connection_init', [{ type: 'connection_init', payload: {} }], 4429],
      ['a subscribe whose id a running subscription holds', [subscribe, subscribe], 4409],
      ['a message of no known type', [{ id: 'odd', type: 'no-such-type' }], 4400],
    ] as const) {
      const s = await openGql(ctx, url, primary)
      try {
        for (const message of messages) s.send(message)
        await s.next(() => false, ctx.config.timeoutMs)
        assert(
          s.closed?.code === code,
          `${what} ${s.closed ? `closed the socket with ${s.closed.code} ${short(s.closed.reason)}` : 'left it open'}, not ${code}`,
        )
      } finally {
        s.ws.terminate()
      }
    }
    for (const [what, socket] of [
      ['the token in connection_init', () => openGql(ctx, url, null, { authorization: `Bearer ${primary}` })],
      [
        'the token as access_token',
        () => openGql(ctx, url, null, {}, `?access_token=${encodeURIComponent(primary)}`),
      ],
      // An empty access_token is none: the token then comes in connection_init.
      [
        'an empty access_token and the token in connection_init',
        () => openGql(ctx, url, null, { authorization: `Bearer ${primary}` }, '?access_token='),
      ],
      ['the token at the upgrade', () => openGql(ctx, url, primary)],
    ] as const) {
      const s = await socket()
      try {
        assert(
          s.messages.some((m) => m.type === 'connection_ack'),
          `with ${what} the socket got no connection_ack: ${s.refused ?? ''} ${short(s.closed)} ${short(s.messages)}`,
        )
        s.send({ id: 'q', type: 'subscribe', payload: { query: '{ agents(limit: 1) { next_cursor } }' } })
        const done = await s.next((m) => m.id === 'q' && m.type === 'complete', ctx.config.timeoutMs)
        const payload = payloadsOf(s, 'q')[0]
        assert(
          done !== undefined && 'agents' in obj(payload?.data),
          `with ${what} a query over the socket answered ${short(s.messages)}`,
        )
      } finally {
        s.ws.terminate()
      }
    }
  },
}
