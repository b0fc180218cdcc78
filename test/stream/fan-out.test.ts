/**
 * Fan-out on a real server, on both stores: a new record reaches every /v1/stream and GraphQL subscriber of its
 * topic through ONE store read (a spy on the ingestion service counts the reads that carried it), and a subscriber
 * that resumes from an old position while records keep landing gets every record exactly once, in seq order.
 */
import { type Client, createClient } from 'graphql-ws'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import type { RecordView } from '../../src/domain/ingestion/service.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { openClient, type TestClient } from './client.js'

const STREAM_SUBSCRIBERS = 30
const GRAPHQL_SUBSCRIBERS = 20

function records(from: number, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    id: `r${from + i}`,
    ts: '2026-11-24T06:00:00Z',
    source: 'fan-out-test',
    policy_class: 'public',
    body: { n: from + i },
  }))
}

/** A graphql-ws subscription to a connector's records: the seqs it received, and a wait for a count of them. */
function graphqlFollower(baseUrl: string, token: string, connector: string, since: number) {
  const client: Client = createClient({
    url: `${baseUrl.replace('http', 'ws')}/v1/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
  })
  const seqs: number[] = []
  const waiters = new Set<() => void>()
  let failure: unknown
  client.subscribe(
    { query: `subscription { connectorRecords(connector_id: "${connector}", since: ${since}) { seq } }` },
    {
      next: (m) => {
        const record = m.data?.connectorRecords as { seq: number } | undefined
        if (record) seqs.push(record.seq)
        else failure = new Error(`a result without a record: ${JSON.stringify(m)}`)
        for (const w of [...waiters]) w()
      },
      error: (err) => {
        failure = err
        for (const w of [...waiters]) w()
      },
      complete: () => {},
    },
  )
  return {
    seqs,
    client,
    /** Resolves once `count` seqs arrived; rejects on a subscription error or after 10 s (a bounded wait). */
    until(count: number): Promise<void> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`have ${seqs.length} of ${count}`)), 10_000)
        const check = () => {
          if (failure) reject(failure)
          else if (seqs.length >= count) resolve()
          else return
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
        check()
      })
    },
  }
}

const seqsOf = (c: TestClient) => c.messages.filter((m) => m.type === 'record').map((m) => m.seq)
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe.each(backends())('fan-out to subscribers of one topic ($name)', (backend) => {
  let t: TestServer
  let token: string
  const streams: TestClient[] = []
  const graphqls: Client[] = []

  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl() })
    token = (await t.createKey({ scopes: ['*'], tier: 'enterprise' })).token
  })
  afterEach(async () => {
    for (const c of streams.splice(0)) await c.close()
    for (const c of graphqls.splice(0)) await c.dispose()
  })
  afterAll(() => t.close())

  async function ingest(connector: string, batch: ReturnType<typeof records>): Promise<void> {
    const res = await t.request('POST', `/v1/grid/connectors/${connector}/ingest`, {
      token,
      body: { records: batch },
    })
    expect(res.status, res.text).toBe(202)
  }

  it(`carries a new record to ${STREAM_SUBSCRIBERS} stream and ${GRAPHQL_SUBSCRIBERS} GraphQL subscribers with one store read`, async () => {
    const connector = 'fan'
    const stream = await Promise.all(
      Array.from({ length: STREAM_SUBSCRIBERS }, () => openClient(t.baseUrl, token)),
    )
    streams.push(...stream)
    for (const c of stream)
      c.send({
        type: 'subscribe',
        topics: [`connector:${connector}`],
        since: { [`connector:${connector}`]: 0 },
      })
    await Promise.all(stream.map((c) => c.waitFor((m) => m.type === 'subscribed')))
    const gql = Array.from({ length: GRAPHQL_SUBSCRIBERS }, () =>
      graphqlFollower(t.baseUrl, token, connector, 0),
    )
    graphqls.push(...gql.map((g) => g.client))

    // Record 1 reaches everyone, by its own catch-up or by the shared read: each has read up to the end once.
    await ingest(connector, records(1, 1))
    await Promise.all([
      ...stream.map((c) => c.collect((m) => m.type === 'record', 1)),
      ...gql.map((g) => g.until(1)),
    ])

    const reads = vi.spyOn(t.services.ingestion, 'recordsAfter')
    try {
      await ingest(connector, records(2, 1))
      await Promise.all([
        ...stream.map((c) => c.collect((m) => m.type === 'record', 2)),
        ...gql.map((g) => g.until(2)),
      ])
      const carried: number[] = []
      for (const result of reads.mock.results) {
        if (result.type !== 'return') continue
        const { rows } = (await result.value) as { rows: RecordView[] }
        if (rows.some((r) => r.seq === 2)) carried.push(2)
      }
      // A read per subscriber would be 50 here (the per-subscriber delivery this replaced).
      expect(carried).toHaveLength(1)
    } finally {
      reads.mockRestore()
    }
    for (const c of stream) expect(seqsOf(c)).toEqual([1, 2])
    for (const g of gql) expect(g.seqs).toEqual([1, 2])
  })

  it('gives a subscriber resuming from an old position every record once, in seq order, while the feed moves', async () => {
    const connector = 'late'
    const live = await Promise.all(Array.from({ length: 3 }, () => openClient(t.baseUrl, token)))
    streams.push(...live)
    for (const c of live)
      c.send({
        type: 'subscribe',
        topics: [`connector:${connector}`],
        since: { [`connector:${connector}`]: 0 },
      })
    await Promise.all(live.map((c) => c.waitFor((m) => m.type === 'subscribed')))

    const BATCHES = 40
    const SIZE = 5
    let late: TestClient | undefined
    let lateGraphql: ReturnType<typeof graphqlFollower> | undefined
    for (let b = 0; b < BATCHES; b++) {
      await ingest(connector, records(b * SIZE + 1, SIZE))
      if (b === 10) {
        // Joins while the shared feed keeps moving: it reads 8… for itself, then joins without a seam.
        late = await openClient(t.baseUrl, token)
        streams.push(late)
        late.send({
          type: 'subscribe',
          topics: [`connector:${connector}`],
          since: { [`connector:${connector}`]: 7 },
        })
        lateGraphql = graphqlFollower(t.baseUrl, token, connector, 7)
        graphqls.push(lateGraphql.client)
      }
    }
    const total = BATCHES * SIZE
    if (!late || !lateGraphql) throw new Error('the late subscribers were opened')
    await late.collect((m) => m.type === 'record', total - 7, 10_000)
    await lateGraphql.until(total - 7)
    await Promise.all(live.map((c) => c.collect((m) => m.type === 'record', total, 10_000)))
    // One more record after everything: a duplicate or a straggler would show up beside it.
    await ingest(connector, records(total + 1, 1))
    await late.collect((m) => m.type === 'record', total - 6)
    await lateGraphql.until(total - 6)
    await Promise.all(live.map((c) => c.collect((m) => m.type === 'record', total + 1)))

    expect(seqsOf(late)).toEqual(range(8, total + 1))
    expect(lateGraphql.seqs).toEqual(range(8, total + 1))
    for (const c of live) expect(seqsOf(c)).toEqual(range(1, total + 1))
  })
})
