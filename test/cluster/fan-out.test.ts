/**
 * Cross-replica delivery on PostgreSQL: a stream subscriber on one replica receives what another replica commits
 * (LISTEN/NOTIFY wake-ups; the fallback poll is set far beyond the test so only the feed can deliver), in order,
 * without loss or duplicate; and a subscriber whose replica dies resumes on another with `since`.
 * Prints the measured cross-replica latency.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openClient, type StreamMessage, type TestClient } from '../stream/client.js'
import { backends } from '../support/backends.js'
import { type Cluster, issueToken, startCluster } from '../support/cluster.js'

const postgres = backends().filter((b) => b.name === 'postgres')

async function ingest(baseUrl: string, token: string, connector: string, ids: string[]): Promise<void> {
  const res = await fetch(`${baseUrl}/v1/grid/connectors/${connector}/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      records: ids.map((id) => ({
        id,
        ts: '2026-11-23T06:00:00.000Z',
        source: 'cluster-test',
        policy_class: 'public',
        body: { id },
      })),
    }),
  })
  expect(res.status, await res.text()).toBe(202)
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}

/** Opens a stream through `url`, retrying while the balancer still routes to a dead replica. */
async function openWithRetry(url: string, token: string): Promise<TestClient> {
  let last: unknown
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      return await openClient(url, token)
    } catch (err) {
      last = err
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  throw last
}

describe.skipIf(postgres.length === 0)('stream fan-out across replicas', () => {
  let cluster: Cluster
  let token: string

  beforeAll(async () => {
    const url = await postgres[0]!.freshUrl()
    token = await issueToken(url, [
      '--workspace',
      'fan-out',
      '--tier',
      'enterprise',
      '--burst-limit',
      '100000',
    ])
    cluster = await startCluster({
      databaseUrl: url,
      replicas: 2,
      env: { AGENTOPS_STREAM_FALLBACK_POLL_MS: '600000' },
    })
  })

  afterAll(async () => {
    await cluster?.stop()
  })

  it('delivers records and run events committed on replica 0 to a subscriber on replica 1, in order, once', async () => {
    const [a, b] = cluster.replicas as [Cluster['replicas'][0], Cluster['replicas'][0]]
    const client = await openClient(b.url, token)
    try {
      client.send({ type: 'subscribe', topics: ['connector:lat', 'runs'] })
      await client.collect((m) => m.type === 'subscribed', 2)
      const COUNT = 60
      const requestedAt = new Map<number, number>()
      const answeredAt = new Map<number, number>()
      const latencies: number[] = []
      const afterAnswer: number[] = []
      client.ws.on('message', (data) => {
        const m = JSON.parse(data.toString()) as StreamMessage
        if (m.type === 'record' && m.topic === 'connector:lat') {
          const now = performance.now()
          const sent = requestedAt.get(m.seq as number)
          if (sent !== undefined) latencies.push(now - sent)
          const answered = answeredAt.get(m.seq as number)
          afterAnswer.push(answered === undefined ? 0 : Math.max(0, now - answered))
        }
      })
      for (let i = 1; i <= COUNT; i++) {
        // Commit happens inside the request: from its start is an upper bound, from its answer a lower one.
        requestedAt.set(i, performance.now())
        await ingest(a.url, token, 'lat', [`r-${i}`])
        answeredAt.set(i, performance.now())
        await new Promise((r) => setTimeout(r, 15))
      }
      const records = await client.collect((m) => m.type === 'record', COUNT, 15_000)
      expect(records.map((m) => m.seq)).toEqual(Array.from({ length: COUNT }, (_, i) => i + 1))
      await new Promise((r) => setTimeout(r, 300))
      expect(client.messages.filter((m) => m.type === 'record')).toHaveLength(COUNT)

      const sorted = [...latencies].sort((x, y) => x - y)
      const p50 = percentile(sorted, 50)
      const p99 = percentile(sorted, 99)
      const lower = [...afterAnswer].sort((x, y) => x - y)
      console.log(
        `[cluster] cross-replica stream latency over ${sorted.length} records, from the ingest request's start: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms; from its 202: p50 ${percentile(lower, 50).toFixed(1)} ms, p99 ${percentile(lower, 99).toFixed(1)} ms (target p99 <= 250 ms)`,
      )
      // Generous bound for a loaded 2-core machine; the printed figure is the measurement.
      expect(p99).toBeLessThan(2_000)

      // The `runs` topic: an event appended on replica 0 reaches replica 1's subscriber too.
      const agent = await fetch(`${a.url}/v1/agents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'fan-out-agent', behavior: 'autonomous', capabilities: [] }),
      })
      const agentId = ((await agent.json()) as { agent_id: string }).agent_id
      const run = await fetch(`${a.url}/v1/agents/${agentId}/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: {} }),
      })
      expect(run.status).toBe(201)
      const runId = ((await run.json()) as { run_id: string }).run_id
      const started = await client.waitFor(
        (m) => m.type === 'event' && m.event?.event === 'run.started' && m.event?.run_id === runId,
        5_000,
      )
      expect(started.topic).toBe('runs')
    } finally {
      await client.close()
    }
  }, 60_000)

  it('a subscriber whose replica dies resumes on the other with since, losing and repeating nothing', async () => {
    const client = await openClient(cluster.url, token)
    const victim = cluster.balancer.picks.filter((p) => p.kind === 'ws').at(-1)?.replica as number
    const survivor = cluster.replicas[1 - victim] as Cluster['replicas'][0]
    const received: number[] = []
    const track = (c: TestClient) =>
      c.ws.on('message', (data) => {
        const m = JSON.parse(data.toString()) as StreamMessage
        if (m.type === 'record' && m.topic === 'connector:die') received.push(m.seq as number)
      })
    track(client)
    client.send({ type: 'subscribe', topics: ['connector:die'], since: { 'connector:die': 0 } })
    await client.waitFor((m) => m.type === 'subscribed')

    const BATCHES = 30
    const producer = (async () => {
      for (let i = 1; i <= BATCHES; i++) {
        await ingest(survivor.url, token, 'die', [`d-${i}-a`, `d-${i}-b`])
        await new Promise((r) => setTimeout(r, 20))
      }
    })()
    // Kill the subscriber's replica outright once some records have arrived.
    const deadline = Date.now() + 15_000
    while (received.length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    cluster.replicas[victim]?.kill('SIGKILL')
    await client.closed
    await cluster.replicas[victim]?.exited

    // Reconnect through the balancer (it finds the live replica) and resume after the last seq seen.
    const resumed = await openWithRetry(cluster.url, token)
    try {
      track(resumed)
      const since = received.at(-1) ?? 0
      resumed.send({ type: 'subscribe', topics: ['connector:die'], since: { 'connector:die': since } })
      await producer
      const total = BATCHES * 2
      const waitUntil = Date.now() + 15_000
      while (received.length < total && Date.now() < waitUntil) await new Promise((r) => setTimeout(r, 20))
      expect(received).toEqual(Array.from({ length: total }, (_, i) => i + 1))
      expect(resumed.messages.some((m) => m.type === 'gap')).toBe(false)
    } finally {
      await resumed.close()
    }
  }, 60_000)
})
