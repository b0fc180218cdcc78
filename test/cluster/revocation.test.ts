/**
 * A revoked or expired key loses its open sockets at once (src/domain/keys/watch.ts): every /v1/stream and
 * graphql-ws socket of the key closes with 4401, on the replica that revoked and on the others (the change feed
 * carries the revoke; a poll of the watched keys backs it), and no record committed after the revoke reaches them.
 * Across replicas the heartbeat, the stream's fallback poll and the poll of the watched keys are all set to ten
 * minutes, far beyond the test's bound: a pass can only come from the push path (the revoking replica's own end of
 * the key, the change feed on the other). On SQLite the poll is what sees an expiry or another process's revoke, so
 * it keeps its default there. (Before the push, a heartbeat that verified each socket's key again closed them:
 * 11.6-13.9 s on PostgreSQL, with 20-25 records delivered after the revoke; the watch is now the only way.) Latency
 * figures: `npm run bench:revocation`.
 */
import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { openClient, type TestClient } from '../stream/client.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'

const SLOW = { streamHeartbeatMs: 600_000, streamFallbackPollMs: 600_000 }
/** Nothing but the push path can close a socket within the test's bound. */
const PUSH_ONLY = { ...SLOW, keyWatchPollMs: 600_000 }
/** How long a test waits for a close: generous for a loaded machine, and far below every period in PUSH_ONLY. */
const BOUND_MS = 20_000

async function ingest(t: TestServer, token: string, connector: string, ids: string[]): Promise<void> {
  const res = await t.request('POST', `/v1/grid/connectors/${connector}/ingest`, {
    token,
    body: {
      records: ids.map((id) => ({
        id,
        ts: '2026-11-24T06:00:00.000Z',
        source: 'revocation-test',
        policy_class: 'public',
        body: { id },
      })),
    },
  })
  expect(res.status, res.text).toBe(202)
}

async function subscribed(t: TestServer, token: string, connector: string): Promise<TestClient> {
  const c = await openClient(t.baseUrl, token)
  c.send({ type: 'subscribe', topics: [`connector:${connector}`] })
  await c.waitFor((m) => m.type === 'subscribed')
  return c
}

/** A graphql-ws socket past connection_ack; resolves `closed` with the close code, `reason` with its reason. */
async function graphqlSocket(t: TestServer, token: string) {
  const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/v1/graphql`, 'graphql-transport-ws', {
    headers: { authorization: `Bearer ${token}` },
  })
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)))
  const reason = new Promise<string>((resolve) => ws.on('close', (_code, why) => resolve(why.toString())))
  const acked = new Promise<void>((resolve) =>
    ws.on('message', (d) => {
      if (JSON.parse(d.toString()).type === 'connection_ack') resolve()
    }),
  )
  ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })))
  await acked
  return { ws, closed, reason }
}

/** Milliseconds from `since` until `closed` settles, with its code; 'open' after `withinMs` (bounded wait). */
async function closeDelay(closed: Promise<number | { code: number }>, since: number, withinMs = BOUND_MS) {
  const settled = await Promise.race([
    closed.then((c) => (typeof c === 'number' ? c : c.code)),
    new Promise<'open'>((r) => setTimeout(() => r('open'), withinMs).unref()),
  ])
  return { code: settled, ms: Math.round(performance.now() - since) }
}

const records = (c: TestClient) =>
  c.messages.filter((m) => m.type === 'record').map((m) => m.record?.id ?? m.id)

describe.each(backends().filter((b) => b.name === 'postgres'))(
  'revocation across replicas on $name',
  (backend) => {
    let a: TestServer
    let b: TestServer
    beforeAll(async () => {
      const databaseUrl = await backend.freshUrl()
      a = await startTestServer({ databaseUrl, config: PUSH_ONLY })
      b = await startTestServer({ databaseUrl, config: PUSH_ONLY })
    }, 60_000)
    afterAll(async () => {
      await a?.close()
      await b?.close()
    })

    it('closes every socket of the key with 4401 on both replicas, and delivers nothing committed after', async () => {
      const workspace = `revoke-${Date.now()}`
      const doomed = await a.createKey({ workspace, scopes: ['*'] })
      const writer = (await a.createKey({ workspace, scopes: ['*'] })).token
      const onA = await subscribed(a, doomed.token, 'c1')
      const onB = await subscribed(b, doomed.token, 'c1')
      const gqlB = await graphqlSocket(b, doomed.token)
      const survivor = await subscribed(b, writer, 'c1')
      await ingest(a, writer, 'c1', ['before'])
      await Promise.all([onA, onB, survivor].map((c) => c.waitFor((m) => m.type === 'record')))

      const revokedAt = performance.now()
      expect(await a.services.keyAdmin.revoke(doomed.key_id)).toBe(true)
      // Committed after the revoke: must reach the survivor only.
      await ingest(a, writer, 'c1', ['after'])
      const [closedA, closedB, closedGql] = await Promise.all([
        closeDelay(onA.closed, revokedAt),
        closeDelay(onB.closed, revokedAt),
        closeDelay(gqlB.closed, revokedAt),
      ])
      await survivor.waitFor((m) => m.type === 'record' && records(survivor).length === 2)
      console.log(
        `[revocation] close after revoke: revoking replica ${closedA.ms} ms, other replica ${closedB.ms} ms (stream), ${closedGql.ms} ms (graphql-ws)`,
      )
      expect([closedA.code, closedB.code, closedGql.code]).toEqual([4401, 4401, 4401])
      expect(records(onA)).toHaveLength(1)
      expect(records(onB)).toHaveLength(1)
      expect(onA.messages.filter((m) => m.type === 'error').map((m) => m.error?.code)).toEqual([
        'unauthenticated',
      ])
      expect(survivor.ws.readyState).toBe(WebSocket.OPEN)
      await survivor.close()
    }, 60_000)
  },
)

describe('an expiring key on SQLite', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ config: SLOW })
  })
  afterAll(() => t.close())

  it('closes its /v1/stream and graphql-ws sockets with 4401 once it expires', async () => {
    const key = await t.createKey({ scopes: ['*'], expiresInSeconds: 1 })
    const issuedAt = performance.now()
    const stream = await subscribed(t, key.token, 'c1')
    const gql = await graphqlSocket(t, key.token)
    const [s, g] = await Promise.all([closeDelay(stream.closed, issuedAt), closeDelay(gql.closed, issuedAt)])
    console.log(`[revocation] expiry (1 s key): stream closed ${s.ms} ms, graphql-ws ${g.ms} ms after issue`)
    expect([s.code, g.code]).toEqual([4401, 4401])
    // The reason is REST's 401 message for the same key, as for every 4401 of graphql-ws.
    expect(await gql.reason).toBe('The bearer token has expired')
  })

  it('closes a socket when another process revokes the key (the CLI on SQLite: the poll sees it)', async () => {
    const key = await t.createKey({ scopes: ['*'] })
    const stream = await subscribed(t, key.token, 'c2')
    // As `agentops keys revoke` does from its own process: the row changes, this server's feed hears nothing.
    await t.services.db.run('UPDATE api_keys SET revoked_at = $2 WHERE id = $1', [key.key_id, Date.now()])
    const revokedAt = performance.now()
    const closed = await closeDelay(stream.closed, revokedAt)
    console.log(`[revocation] revoke by another process on SQLite: closed after ${closed.ms} ms`)
    expect(closed.code).toBe(4401)
  })
})
