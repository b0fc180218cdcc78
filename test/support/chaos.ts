/**
 * Kill -9 loops under load: a real `agentops serve` takes keyed POSTs (agents, runs) and keyed ingest batches from
 * several clients and is killed with SIGKILL at a random moment, again and again, on one store. Then a fresh server
 * checks the promises of issue 25: every acknowledged write is there exactly once, every replay of an answered key
 * is byte-identical, and every retried unanswered key gives exactly one resource. Used by `npm run chaos` (larger)
 * and test/cluster/chaos.test.ts (a few cycles).
 */
import { issueToken, type Replica, startReplica } from './cluster.js'

export interface ChaosOptions {
  databaseUrl: string
  /** Kill cycles. */
  cycles: number
  /** Concurrent clients during each cycle. */
  clients: number
  /** Load before the kill, in ms: a random time in [min, max]. */
  loadMs: [number, number]
  log?: (line: string) => void
}

export interface ChaosReport {
  cycles: number
  /** Requests answered before their server died. */
  answered: number
  /** Requests whose server died before answering (retried afterwards). */
  unanswered: number
  replays: number
  /** Broken promises, one line each; empty when every promise held. */
  violations: string[]
}

interface Answer {
  status: number
  text: string
  replayed: boolean
}

interface Op {
  kind: 'agent' | 'run' | 'ingest'
  key: string
  path: string
  body: unknown
  /** Ids this op creates: the agent's name, the run's input tag, the records' ids. */
  tags: string[]
  answer?: Answer
}

const TIMEOUT_MS = 10_000

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => {})
  const token = await issueToken(options.databaseUrl, [
    '--workspace',
    'chaos',
    '--limit-per-hour',
    '100000000',
    '--burst-limit',
    '10000000',
  ])
  const send = async (base: string, op: Pick<Op, 'path' | 'body'>, key?: string): Promise<Answer> => {
    const res = await fetch(`${base}${op.path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body: JSON.stringify(op.body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    })
    return {
      status: res.status,
      text: await res.text(),
      replayed: res.headers.get('idempotent-replayed') === 'true',
    }
  }

  let replica: Replica = await startReplica(0, options.databaseUrl)
  const target = await send(replica.url, {
    path: '/v1/agents',
    body: { name: 'chaos-target', behavior: 'autonomous' },
  })
  const agentId = (JSON.parse(target.text) as { agent_id: string }).agent_id
  const ops: Op[] = []
  let serial = 0
  const nextOp = (client: number): Op => {
    const key = `chaos-${process.pid}-${++serial}`
    switch (serial % 3) {
      case 0:
        return {
          kind: 'agent',
          key,
          path: '/v1/agents',
          body: { name: key, behavior: 'autonomous' },
          tags: [key],
        }
      case 1:
        return {
          kind: 'run',
          key,
          path: `/v1/agents/${agentId}/runs`,
          body: { inputs: { chaos: key } },
          tags: [key],
        }
      default: {
        const ids = [0, 1, 2].map((i) => `${key}-r${i}`)
        return {
          kind: 'ingest',
          key,
          path: `/v1/grid/connectors/chaos-${client}/ingest`,
          body: {
            records: ids.map((id) => ({
              id,
              ts: '2026-11-24T12:00:00Z',
              source: 'chaos',
              policy_class: 'internal',
              body: { id },
            })),
          },
          tags: ids,
        }
      }
    }
  }

  for (let cycle = 1; cycle <= options.cycles; cycle++) {
    if (cycle > 1) replica = await startReplica(0, options.databaseUrl)
    const base = replica.url
    let dead = false
    const client = async (n: number) => {
      while (!dead) {
        const op = nextOp(n)
        ops.push(op)
        try {
          const answer = await send(base, op, op.key)
          // A 5xx is no answer: the key stays free, and the retry below must still give one resource.
          if (answer.status < 500) op.answer = answer
        } catch {
          return // the server died under this request: it stays unanswered
        }
      }
    }
    const clients = Array.from({ length: options.clients }, (_, n) => client(n))
    const [min, max] = options.loadMs
    await new Promise((r) => setTimeout(r, min + Math.random() * (max - min)))
    replica.kill('SIGKILL')
    await replica.exited
    dead = true
    await Promise.all(clients)
    log(
      `cycle ${cycle}: ${ops.filter((o) => o.answer).length} answered, ${ops.filter((o) => !o.answer).length} not`,
    )
  }

  replica = await startReplica(0, options.databaseUrl)
  const violations: string[] = []
  try {
    const answeredBefore = ops.filter((o) => o.answer).length
    const unanswered = ops.filter((o) => !o.answer)
    // Retry every unanswered key with its request, as a client would (a dead server's claim may still be held for
    // a moment on PostgreSQL, until it notices the closed connection: 409 in progress, then the answer).
    for (const op of unanswered) {
      let answer = await send(replica.url, op, op.key)
      for (let i = 0; i < 100 && answer.status === 409; i++) {
        await new Promise((r) => setTimeout(r, 100))
        answer = await send(replica.url, op, op.key)
      }
      if (answer.status >= 300)
        violations.push(`retry of unanswered ${op.kind} ${op.key}: ${answer.status} ${answer.text}`)
      op.answer = answer
    }
    // Every answered key replays its answer byte for byte.
    let replays = 0
    for (const op of ops) {
      const first = op.answer as Answer
      const again = await send(replica.url, op, op.key)
      replays++
      if (!again.replayed || again.status !== first.status || again.text !== first.text) {
        violations.push(
          `replay of ${op.kind} ${op.key}: ${first.status} ${first.text} then ${again.status} ${again.text}`,
        )
      }
    }
    // Every write is there exactly once.
    const counts = new Map<string, number>()
    const tally = (tag: string) => counts.set(tag, (counts.get(tag) ?? 0) + 1)
    const page = async (path: string, each: (item: Record<string, unknown>) => void) => {
      let cursor: string | null = null
      do {
        const url = `${replica.url}${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
        const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
        if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`)
        const body = (await res.json()) as { data: Record<string, unknown>[]; next_cursor: string | null }
        for (const item of body.data) each(item)
        cursor = body.next_cursor
      } while (cursor)
    }
    await page('/v1/agents', (a) => tally(String(a.name)))
    await page(`/v1/agents/${agentId}/runs`, (r) => tally(String((r.inputs as { chaos?: string }).chaos)))
    // The connectors some batch was sent to (a client may never have sent one before its server died).
    const connectors = new Set(
      ops.filter((o) => o.kind === 'ingest').map((o) => o.path.replace(/\/ingest$/, '')),
    )
    for (const connector of connectors) await page(`${connector}/records`, (r) => tally(String(r.id)))
    for (const op of ops) {
      for (const tag of op.tags) {
        const n = counts.get(tag) ?? 0
        if (n !== 1) violations.push(`${op.kind} ${tag} is there ${n} times (answer ${op.answer?.status})`)
      }
    }
    return {
      cycles: options.cycles,
      answered: answeredBefore,
      unanswered: unanswered.length,
      replays,
      violations,
    }
  } finally {
    replica.kill('SIGTERM')
    await replica.exited
  }
}
