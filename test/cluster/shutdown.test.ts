/**
 * Graceful shutdown of the real `agentops serve` process: on SIGTERM or SIGINT it stops accepting, lets a request
 * in progress finish (answered with `Connection: close`), closes WebSockets with 1001, logs what stopped it and exits 0.
 * On PostgreSQL, a run the stopping replica held is taken over by another replica at once, not after its lease.
 */
import { connect } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openClient } from '../stream/client.js'
import { backends } from '../support/backends.js'
import { issueToken, startReplica } from '../support/cluster.js'
import { testTempDir } from '../support/temp.js'
import { type Receiver, startReceiver } from '../webhooks/receiver.js'

/** `agentops serve` logs at info here, so its lifecycle lines are on its stdout: what it says it stopped on. */
const LOGGED = { AGENTOPS_LOG_LEVEL: 'info' }
function stoppedLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === 'stopped')
}

const postgres = backends().filter((b) => b.name === 'postgres')

/** One keyed write the load sent: an agent, or an ingest batch of one record. */
interface Write {
  key: string
  path: string
  body: unknown
  /** The agent's name or the record's id: what must be there exactly once. */
  tag: string
  kind: 'agent' | 'record'
  /** The answer, when one came (a 2xx is an acknowledged write). */
  answer?: { status: number; text: string }
}

const REQUEST_TIMEOUT_MS = 30_000

/**
 * Keyed POSTs, keyed ingest batches, an open stream and a webhook attempt (the receiver never answers) all in
 * flight when the signal lands; on SQLite enough commits have gone by for WAL checkpoints to run in their worker
 * thread. Both signals on both stores: the two share one store per backend, each signal its own server. After each
 * exit a new server on the store checks that nothing acknowledged was lost or doubled: every 2xx write is there
 * exactly once and a keyed retry replays its answer byte for byte; a request the signal cut off, retried with its
 * key, gives exactly one resource. The store's own last wait is tested in test/store/sqlite-close.test.ts.
 */
describe.each(backends())('shutdown of agentops serve under load on $name', (backend) => {
  let databaseUrl = ''
  let token = ''
  let receiver: Receiver
  /** Every write of every signal so far, in the order sent. */
  const writes: Write[] = []

  beforeAll(async () => {
    databaseUrl = await backend.freshUrl()
    token = await issueToken(databaseUrl, [
      '--workspace',
      'load',
      '--limit-per-hour',
      '100000000',
      '--burst-limit',
      '10000000',
    ])
    receiver = await startReceiver('hang')
  }, 60_000)
  afterAll(() => receiver?.close())

  const post = async (base: string, path: string, body: unknown, key?: string) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    return { status: res.status, text: await res.text(), replayed: res.headers.get('idempotent-replayed') }
  }

  /** A new server on the store: what was acknowledged is there once and replays; what was cut off retries to one. */
  const checkNothingLost = async (): Promise<string[]> => {
    const replica = await startReplica(0, databaseUrl)
    const violations: string[] = []
    try {
      for (const w of writes) {
        if (w.answer && w.answer.status >= 200 && w.answer.status < 300) {
          const again = await post(replica.url, w.path, w.body, w.key)
          if (again.replayed !== 'true' || again.status !== w.answer.status || again.text !== w.answer.text)
            violations.push(
              `replay of ${w.kind} ${w.key}: ${w.answer.status} ${w.answer.text} then ${again.status} ${again.text}`,
            )
          continue
        }
        if (w.answer && w.answer.status < 500)
          violations.push(`${w.kind} ${w.key} was refused: ${w.answer.status} ${w.answer.text}`)
        // Cut off by the signal (no answer, or a 5xx): a client retries with its key, and gets one resource.
        let again = await post(replica.url, w.path, w.body, w.key)
        for (let i = 0; i < 100 && again.status === 409; i++) {
          await new Promise((r) => setTimeout(r, 100))
          again = await post(replica.url, w.path, w.body, w.key)
        }
        if (again.status < 200 || again.status >= 300)
          violations.push(`retry of cut-off ${w.kind} ${w.key}: ${again.status} ${again.text}`)
        w.answer = { status: again.status, text: again.text }
      }
      const counts = new Map<string, number>()
      const page = async (path: string, tagOf: (item: Record<string, unknown>) => string) => {
        let cursor: string | null = null
        do {
          const url = `${replica.url}${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
          const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
          if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`)
          const body = (await res.json()) as { data: Record<string, unknown>[]; next_cursor: string | null }
          for (const item of body.data) counts.set(tagOf(item), (counts.get(tagOf(item)) ?? 0) + 1)
          cursor = body.next_cursor
        } while (cursor)
      }
      await page('/v1/agents', (a) => String(a.name))
      const connectors = new Set(writes.filter((w) => w.kind === 'record').map((w) => w.path))
      for (const ingest of connectors)
        await page(ingest.replace(/\/ingest$/, '/records'), (r) => String(r.id))
      for (const w of writes) {
        const n = counts.get(w.tag) ?? 0
        if (n !== 1) violations.push(`${w.kind} ${w.tag} is there ${n} times (answer ${w.answer?.status})`)
      }
    } finally {
      replica.kill('SIGTERM')
      await replica.exited
    }
    return violations
  }

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'on %s exits 0 with the one line whatever is in flight, and loses nothing it acknowledged',
    async (signal) => {
      // The receiver's exact host:port is the replica's one private webhook target.
      const replica = await startReplica(0, databaseUrl, {
        ...LOGGED,
        AGENTOPS_WEBHOOK_PRIVATE_TARGETS: new URL(receiver.url).host,
      })
      try {
        const hook = await post(replica.url, '/v1/webhooks', {
          url: receiver.url,
          events: ['agent.created'],
          secret: 'x'.repeat(32),
        })
        expect(hook.status).toBe(201)
        const attemptsBefore = receiver.received.length
        const client = await openClient(replica.url, token)
        let answered = 0
        let stopping = false
        const loop = async (n: number) => {
          for (let i = 0; !stopping; i++) {
            const key = `${signal}-${n}-${i}`
            const w: Write =
              i % 3 === 2
                ? {
                    key,
                    kind: 'record',
                    tag: key,
                    path: `/v1/grid/connectors/c${n}/ingest`,
                    body: {
                      records: [
                        {
                          id: key,
                          ts: '2026-11-23T06:00:00Z',
                          source: 's',
                          policy_class: 'internal',
                          body: {},
                        },
                      ],
                    },
                  }
                : {
                    key,
                    kind: 'agent',
                    tag: key,
                    path: '/v1/agents',
                    body: { name: key, behavior: 'autonomous' },
                  }
            writes.push(w)
            try {
              const { status, text } = await post(replica.url, w.path, w.body, w.key)
              w.answer = { status, text }
              answered++
            } catch {
              return // the server stopped listening: this write stays unanswered
            }
          }
        }
        const loops = Array.from({ length: 8 }, (_, n) => loop(n))
        // A webhook attempt is in flight (its receiver never answers).
        await receiver.waitFor(attemptsBefore + 1, 30_000)
        const deadline = Date.now() + 60_000
        while (answered < 200) {
          if (Date.now() > deadline) throw new Error(`only ${answered} writes answered in 60 s`)
          await new Promise((r) => setTimeout(r, 20))
        }
        replica.kill(signal)
        expect(await replica.exited).toBe(0)
        stopping = true
        await Promise.all(loops)
        expect((await client.closed).code).toBe(1001)
        expect(stoppedLines(replica.output())).toEqual([
          expect.objectContaining({ level: 30, signal, ms: expect.any(Number) }),
        ])
      } finally {
        replica.kill('SIGKILL')
      }
      expect(writes.filter((w) => w.answer && w.answer.status < 300).length).toBeGreaterThanOrEqual(200)
      expect(await checkNothingLost()).toEqual([])
    },
    180_000,
  )
})

describe('graceful shutdown of agentops serve', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    'on %s finishes the request in progress, closes streams with 1001, logs what stopped it, exits 0',
    async (signal) => {
      const databaseUrl = `sqlite:${join(testTempDir('shutdown-'), 'db.sqlite')}`
      const token = await issueToken(databaseUrl, ['--workspace', 'shutdown'])
      const replica = await startReplica(0, databaseUrl, LOGGED)
      const client = await openClient(replica.url, token)
      const port = Number(new URL(replica.url).port)

      // A request whose body is still arriving when the signal lands.
      const body = JSON.stringify({ name: 'in-flight', behavior: 'autonomous' })
      const socket = connect(port, '127.0.0.1')
      let answer = ''
      socket.on('data', (d) => {
        answer += d.toString()
      })
      const socketClosed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
      socket.write(
        `POST /v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
      )
      // The server has the request once its in-flight gauge counts it (a fixed 300 ms could pass first under load).
      const deadline = Date.now() + 10_000
      while (
        !/^agentops_http_requests_in_flight 1$/m.test(await (await fetch(`${replica.url}/metrics`)).text())
      ) {
        if (Date.now() > deadline) throw new Error('the server never counted the half-sent request in flight')
        await new Promise((r) => setTimeout(r, 20))
      }
      replica.kill(signal)

      const closed = await client.closed
      expect(closed.code).toBe(1001)
      // No new connections once shutdown began.
      await expect(fetch(`${replica.url}/healthz`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow()

      socket.write(body.slice(10))
      await socketClosed
      expect(answer).toMatch(/^HTTP\/1\.1 201 Created/)
      expect(answer.toLowerCase()).toContain('connection: close')

      expect(await replica.exited).toBe(0)
      // Every line it wrote is one JSON object (a log collector reads stdout), and it says once what stopped it.
      const lines = replica.output().trim().split('\n')
      for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow()
      expect(stoppedLines(replica.output())).toEqual([
        expect.objectContaining({ level: 30, signal, ms: expect.any(Number) }),
      ])
      // Its lifecycle lines, in order.
      const lifecycle = lines
        .map((line) => (JSON.parse(line) as { msg: string }).msg)
        .filter((msg) => /^(server started|shutdown: draining|shutdown: stopped|stopped)$/.test(msg))
      expect(lifecycle).toEqual(['server started', 'shutdown: draining', 'shutdown: stopped', 'stopped'])
    },
    60_000,
  )

  it.skipIf(postgres.length === 0)(
    'hands a run it was executing to another replica at once (PostgreSQL)',
    async () => {
      const databaseUrl = await postgres[0]!.freshUrl()
      const token = await issueToken(databaseUrl, ['--workspace', 'handover'])
      // A lease far longer than the test: only a released lease lets the other replica continue in time.
      const env = { AGENTOPS_RUN_LEASE_MS: '120000' }
      const first = await startReplica(0, databaseUrl, env)
      const call = async (base: string, method: string, path: string, payload?: unknown) => {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
        })
        return { status: res.status, body: (await res.json()) as Record<string, unknown> }
      }
      const tool = await call(first.url, 'POST', '/v1/tools', {
        name: 'slow',
        provider: 'builtin:delay',
        config: { delay_ms: 700 },
        idempotent: true,
        output_schema: {},
        policy_binding: { envelope: 'default', required_scopes: [] },
      })
      expect(tool.status).toBe(201)
      const agent = await call(first.url, 'POST', '/v1/agents', {
        name: 'handover',
        behavior: 'autonomous',
        capabilities: [],
      })
      const run = await call(first.url, 'POST', `/v1/agents/${agent.body.agent_id}/runs`, {
        inputs: { plan: ['slow', 'slow', 'slow', 'slow', 'slow', 'slow'] },
      })
      expect(run.status).toBe(201)
      const runId = run.body.run_id as string
      // Wait until the first replica is executing it.
      const began = Date.now()
      for (;;) {
        const seen = await call(first.url, 'GET', `/v1/runs/${runId}`)
        if ((seen.body.plan as { steps_completed: number }).steps_completed >= 1) break
        if (Date.now() - began > 20_000)
          throw new Error(`the run did not start: ${JSON.stringify(seen.body)}`)
        await new Promise((r) => setTimeout(r, 100))
      }
      const second = await startReplica(1, databaseUrl, env)
      try {
        first.kill('SIGTERM')
        expect(await first.exited).toBe(0)
        const stoppedAt = Date.now()
        for (;;) {
          const seen = await call(second.url, 'GET', `/v1/runs/${runId}`)
          if (seen.body.status === 'succeeded') break
          if (Date.now() - stoppedAt > 30_000)
            throw new Error(`the other replica did not finish the run: ${JSON.stringify(seen.body)}`)
          await new Promise((r) => setTimeout(r, 100))
        }
        // Well before the 120 s lease could have lapsed.
        expect(Date.now() - stoppedAt).toBeLessThan(30_000)
      } finally {
        second.kill('SIGTERM')
        await second.exited
      }
    },
    90_000,
  )
})
