/**
 * The reference profile's stream protocol beyond subscribing to a connector (spec §4: "The messages a client sends
 * to subscribe to stream topics: not shown"; §1: ingestion "over a streaming socket" and "A WebSocket stream [...]
 * carry live events", with no message shown): ingest over the socket, the `runs` topic's events, unsubscribe and the
 * heartbeat. Every message name is the profile's, so the check is profile; it also gives the contract coverage
 * report those messages. Not `gap`: it needs more than the replay window (1000 messages) on one topic, which cost
 * about a second of CPU (1002 records ingested, 1000 replayed) on a --reference run of about ten.
 */
import type { Check } from '../check.js'
import { type Json, runBody } from '../fixtures.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { batch } from './ingest.js'
import { openStream } from './stream.js'

export const streamProtocolChecks: Check[] = [
  {
    id: 'stream.protocol-messages',
    title:
      'Over the stream, ingest answers ingested (its ref echoed) and pushes the record, the runs topic pushes a started run’s events, unsubscribe answers unsubscribed, and heartbeats come',
    level: 'profile',
    clauses: ['S1.2', 'S1.6'],
    // Mostly waiting on the deployment's clock (a heartbeat period) on resources of its own.
    overlap: true,
    async run(ctx) {
      const s = await openStream(ctx, ctx.config.tokens.primary)
      if (!s) fail('the stream refused the primary token')
      try {
        const connector = ctx.name('conn-proto')
        const topic = `connector:${connector}`
        const wait = ctx.config.waitMs
        s.ws.send(JSON.stringify({ type: 'subscribe', topics: [topic, 'runs'] }))
        for (const t of [topic, 'runs']) {
          const ack = await s.next(
            (m) => (m.type === 'subscribed' && m.topic === t) || m.type === 'error',
            wait,
          )
          assert(ack?.type === 'subscribed', `subscribing to ${t} answered ${short(ack)}`)
        }
        const [record] = batch(ctx, 1)
        const ref = ctx.name('ingest-ref')
        s.ws.send(JSON.stringify({ type: 'ingest', ref, connector_id: connector, records: [record] }))
        const ingested = await s.next((m) => m.ref === ref, wait)
        assert(
          ingested?.type === 'ingested' && ingested.accepted === 1 && ingested.rejected === 0,
          `an ingest message of one good record answered ${short(ingested)}`,
        )
        const pushed = await s.next(
          (m) => m.type === 'record' && (m.record as Json | undefined)?.id === record!.id,
          wait,
        )
        assert(pushed, `the record ingested over the socket was not pushed to ${topic}`)
        const { runId } = await ctx.fx.startRun(await ctx.fx.agent(), runBody())
        const event = await s.next((m) => m.type === 'event' && JSON.stringify(m.event).includes(runId), wait)
        assert(event, `no event of run ${runId} reached the runs topic within ${wait} ms`)
        s.ws.send(JSON.stringify({ type: 'unsubscribe', topics: [topic] }))
        const gone = await s.next((m) => m.type === 'unsubscribed' || m.type === 'error', wait)
        assert(
          gone?.type === 'unsubscribed' && gone.topic === topic,
          `unsubscribing from ${topic} answered ${short(gone)}`,
        )
        const beat = await s.next((m) => m.type === 'heartbeat', wait)
        assert(
          beat,
          `no heartbeat within ${wait} ms (the reference beats every AGENTOPS_STREAM_HEARTBEAT_MS; --wait-ms bounds the wait)`,
        )
      } finally {
        s.close()
      }
    },
  },
]
