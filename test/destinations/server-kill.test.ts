/**
 * Chaos: the server itself (`agentops serve`) killed with SIGKILL in the middle of a stream of events fanned out to
 * three CloudEvents destinations, with an attempt to each in flight (its receiver holds the answer), then a new
 * server on the same store. Counted, not timed: every agent.created event of every agent that exists reaches every
 * destination; nothing arrives for an event that was never committed; what arrives twice (the attempts the kill
 * cut off) carries the same ce-id, so a receiver drops it by event id; and each destination's delivery log ends
 * with exactly one delivered row per event. On each store.
 */
import { describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'
import { issueToken, type Replica, startReplica } from '../support/cluster.js'
import { type Received, startReceiver } from '../webhooks/receiver.js'

const DESTINATIONS = 3
const LOOPS = 4
/** Writes answered before the kill (at least), and the most any loop sends. */
const BEFORE_KILL = 12
const PER_LOOP = 15
/** The first server's attempts wait this long for an answer, so the held ones are still in flight at the kill. */
const FIRST_TIMEOUT_MS = 5_000
const WAIT_MS = 60_000

interface Write {
  key: string
  name: string
  answer?: { status: number; text: string }
}

describe.each(backends())('kill -9 of the server mid-stream on $name', (backend) => {
  it('loses no event and duplicates only what a receiver drops by event id', async () => {
    const databaseUrl = await backend.freshUrl()
    const token = await issueToken(databaseUrl, [
      '--workspace',
      'kill9',
      '--limit-per-hour',
      '100000000',
      '--burst-limit',
      '10000000',
    ])
    const receiver = await startReceiver(200)
    const env = (timeoutMs: number) => ({
      AGENTOPS_DESTINATION_PRIVATE_TARGETS: new URL(receiver.url).host,
      AGENTOPS_WEBHOOK_TIMEOUT_MS: String(timeoutMs),
      AGENTOPS_WEBHOOK_RETRY_BASE_MS: '100',
      AGENTOPS_WEBHOOK_POLL_MS: '100',
    })
    const call = async (base: string, method: string, path: string, body?: unknown, key?: string) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(key ? { 'idempotency-key': key } : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(30_000),
      })
      return { status: res.status, text: await res.text() }
    }
    const pages = async (base: string, path: string): Promise<Record<string, unknown>[]> => {
      const items: Record<string, unknown>[] = []
      let cursor: string | null = null
      for (let i = 0; i < 100; i++) {
        const res = await call(
          base,
          'GET',
          `${path}?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        )
        if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`)
        const page = JSON.parse(res.text) as { data: Record<string, unknown>[]; next_cursor: string | null }
        items.push(...page.data)
        cursor = page.next_cursor
        if (!cursor) return items
      }
      throw new Error(`GET ${path}: more than 100 pages`)
    }

    let first: Replica | undefined
    let second: Replica | undefined
    try {
      first = await startReplica(0, databaseUrl, env(FIRST_TIMEOUT_MS))
      const destinations: string[] = []
      for (let d = 0; d < DESTINATIONS; d++) {
        const res = await call(first.url, 'POST', '/v1/destinations', {
          type: 'cloudevents',
          name: `d${d}`,
          events: ['agent.created'],
          config: { url: receiver.url, mode: 'binary' },
          secrets: { authorization: `Bearer d${d}` },
        })
        expect(res.status).toBe(201)
        destinations.push(String((JSON.parse(res.text) as { destination_id: string }).destination_id))
      }
      // The first attempt to each destination is held: in flight when the server dies.
      receiver.script(...Array.from({ length: DESTINATIONS }, () => 'hang' as const))

      const writes: Write[] = []
      let answered = 0
      let stopping = false
      const loop = async (n: number, base: string) => {
        for (let i = 0; i < PER_LOOP && !stopping; i++) {
          const w: Write = { key: `k-${n}-${i}`, name: `agent-${n}-${i}` }
          writes.push(w)
          try {
            w.answer = await call(base, 'POST', '/v1/agents', { name: w.name, behavior: 'autonomous' }, w.key)
            answered++
          } catch {
            return // the server died: this write stays unanswered
          }
        }
      }
      const loops = Array.from({ length: LOOPS }, (_, n) => loop(n, first?.url ?? ''))
      const deadline = Date.now() + WAIT_MS
      while (receiver.received.length < DESTINATIONS || answered < BEFORE_KILL) {
        if (Date.now() > deadline)
          throw new Error(`${answered} writes answered, ${receiver.received.length} arrivals`)
        await new Promise((r) => setTimeout(r, 5))
      }
      first.kill('SIGKILL')
      expect(await first.exited).toBe('SIGKILL')
      stopping = true
      await Promise.all(loops)
      const held = receiver.received.slice(0, DESTINATIONS)

      second = await startReplica(1, databaseUrl, env(1_000))
      // A write the kill cut off is retried with its key: it gives one agent (or none, if the retry is refused).
      for (const w of writes) {
        if (w.answer) continue
        let again = await call(
          second.url,
          'POST',
          '/v1/agents',
          { name: w.name, behavior: 'autonomous' },
          w.key,
        )
        for (let i = 0; i < 100 && again.status === 409; i++) {
          await new Promise((r) => setTimeout(r, 100))
          again = await call(
            second.url,
            'POST',
            '/v1/agents',
            { name: w.name, behavior: 'autonomous' },
            w.key,
          )
        }
        w.answer = again
      }
      expect(writes.filter((w) => (w.answer?.status ?? 0) >= 300)).toEqual([])
      const agents = await pages(second.url, '/v1/agents')
      const agentIds = new Set(agents.map((a) => String(a.agent_id)))
      expect(agents.map((a) => a.name).sort()).toEqual(writes.map((w) => w.name).sort())

      // Each destination's log: exactly one row per event, delivered (once the held rows' leases ran out and
      // they were sent again).
      const logsSettle = Date.now() + WAIT_MS
      for (const id of destinations) {
        let log = await pages(second.url, `/v1/destinations/${id}/deliveries`)
        while (log.some((row) => row.status !== 'delivered') && Date.now() < logsSettle) {
          await new Promise((r) => setTimeout(r, 100))
          log = await pages(second.url, `/v1/destinations/${id}/deliveries`)
        }
        expect(log.map((row) => row.status).filter((s) => s !== 'delivered')).toEqual([])
        const events = log.map((row) => String(row.event_id))
        expect(new Set(events).size).toBe(events.length)
        expect(events.length).toBe(agentIds.size)
      }
      // Every (destination, agent) pair arrived, whatever the kill cut off.
      const arrivalsOf = (d: number) =>
        receiver.received.filter((r: Received) => r.headers.authorization === `Bearer d${d}`)
      const agentOf = (r: Received) => String((JSON.parse(r.body) as { agent_id?: unknown }).agent_id)
      const allArrived = () =>
        destinations.every((_, d) => {
          const got = new Set(arrivalsOf(d).map(agentOf))
          return [...agentIds].every((id) => got.has(id))
        })
      const until = Date.now() + WAIT_MS
      while (!allArrived() && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
      const problems: string[] = []
      for (let d = 0; d < DESTINATIONS; d++) {
        const byAgent = new Map<string, Set<string>>()
        for (const r of arrivalsOf(d)) {
          const body = JSON.parse(r.body) as { id?: unknown; agent_id?: unknown }
          const ceId = String(r.headers['ce-id'])
          if (ceId !== String(body.id)) problems.push(`d${d}: ce-id ${ceId} is not the event id ${body.id}`)
          const agent = agentOf(r)
          if (!agentIds.has(agent)) problems.push(`d${d}: an event about ${agent}, which does not exist`)
          byAgent.set(agent, (byAgent.get(agent) ?? new Set()).add(ceId))
        }
        for (const id of agentIds) {
          const ids = byAgent.get(id)
          if (!ids) problems.push(`d${d}: the agent.created of ${id} never arrived`)
          else if (ids.size !== 1)
            problems.push(`d${d}: ${id}'s agent.created came with ${ids.size} event ids`)
        }
      }
      expect(problems).toEqual([])
      // The attempts held at the kill were sent again, under the same event id (after the kill unless the server
      // was too slow to die within their time-out, which only moves the duplicate earlier).
      for (const h of held) {
        const again = receiver.received
          .slice(DESTINATIONS)
          .filter(
            (r) =>
              r.headers.authorization === h.headers.authorization &&
              r.headers['ce-id'] === h.headers['ce-id'],
          )
        expect(again.length).toBeGreaterThanOrEqual(1)
      }
    } finally {
      first?.kill('SIGKILL')
      second?.kill('SIGKILL')
      await receiver.close()
    }
  }, 180_000)
})
