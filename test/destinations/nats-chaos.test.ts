/**
 * Chaos: nats-server killed with SIGKILL in the middle of a stream of events and started again on the same store.
 * The outbox retries what was not acknowledged; what JetStream had stored but could not acknowledge is published
 * again with the same Nats-Msg-Id and dropped by the duplicate window. The stream ends with every event exactly
 * once. Counted, not timed.
 */
import { jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type NatsServer, startNats } from '../support/nats.js'
import { type DestinationHarness, destinationHarness } from './helpers.js'

const WS = 'ws_chaos'
const EVENTS = 120

let nats: NatsServer
let nc: NatsConnection
let h: DestinationHarness

beforeAll(async () => {
  nats = await startNats()
  nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 })
  const jsm = await jetstreamManager(nc)
  await jsm.streams.add({ name: 'CHAOS', subjects: ['chaos.>'], duplicate_window: 10 * 60 * 1_000_000_000 })
  h = await destinationHarness('sqlite::memory:', {
    random: () => 0.5,
    timeoutMs: 1_000,
    retry: { baseMs: 200, maxAttempts: 20 },
  })
})
afterAll(async () => {
  await h?.close()
  await nc?.close()
  await nats?.stop()
})

async function storedCount(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    try {
      const jsm = await jetstreamManager(nc, { timeout: 1_000 })
      return (await jsm.streams.info('CHAOS')).state.messages
    } catch {
      await new Promise((r) => setTimeout(r, 100)) // reconnecting after the crash
    }
  }
  throw new Error('the stream could not be read')
}

it('a kill -9 of nats-server mid-stream loses nothing and stores each event once', async () => {
  const d = await h.destinations.create(WS, {
    type: 'nats',
    name: 'chaos bus',
    config: { servers: [nats.url], subject_prefix: 'chaos' },
  })
  for (let i = 0; i < EVENTS; i++) await h.append(WS, 'run.failed', { run_id: `run_${i}`, agent_id: 'agt_c' })
  const sending = h.destinations.dispatcher.runOnce()
  // Let part of the stream through, then kill the server while publishes are in flight.
  for (let i = 0; i < 400 && (await storedCount()) < 10; i++) await new Promise((r) => setTimeout(r, 5))
  const before = await storedCount()
  expect(before).toBeLessThan(EVENTS)
  await nats.crash()
  await sending
  // Retries: advance the clock past each backoff until every row is delivered (bounded).
  let rows = (await h.destinations.listDeliveries(WS, d.id, 0, 200)).rows
  for (let round = 0; round < 40 && rows.some((r) => r.status !== 'delivered'); round++) {
    h.clock.advance(60_000)
    await h.destinations.dispatcher.runOnce()
    rows = (await h.destinations.listDeliveries(WS, d.id, 0, 200)).rows
  }
  expect(rows).toHaveLength(EVENTS)
  expect(rows.filter((r) => r.status !== 'delivered')).toEqual([])
  // Redeliver a few that were delivered: the same Nats-Msg-Id again, dropped by the window.
  for (const row of rows.slice(0, 5)) await h.destinations.redeliver(WS, d.id, row.id)
  await h.destinations.dispatcher.runOnce()
  expect(await storedCount()).toBe(EVENTS)
  const jsm = await jetstreamManager(nc)
  const ids = new Set<string>()
  for (let seq = 1; seq <= EVENTS; seq++) {
    const m = await jsm.streams.getMessage('CHAOS', { seq })
    ids.add(String(m?.header.get('Nats-Msg-Id')))
  }
  expect(ids.size).toBe(EVENTS)
}, 60_000)
