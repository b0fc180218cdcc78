/**
 * The reference profile's stream protocol beyond subscribing to a connector (spec §4: "The messages a client sends
 * to subscribe to stream topics: not shown"; §1: ingestion "over a streaming socket" and "A WebSocket stream [...]
 * carry live events", with no message shown): ingest over the socket, the `runs` topic's events, unsubscribe and the
 * heartbeat. Every message name is the profile's, so the check is profile; it also gives the contract coverage
 * report those messages. `gap` (a resume from before more than the replay window) only where the config declares
 * the window (`stream.replayWindow`): at the reference's default of 1000 messages it cost about a second of CPU
 * (1002 records ingested, 1000 replayed) on a --reference run of about ten, so --reference runs the reference with
 * a window of 20 and declares it.
 */
import type { Check, CheckContext } from '../check.js'
import { expectStatus, type Json } from '../fixtures.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { batch } from './ingest.js'
import { openStream } from './stream.js'

type Stream = NonNullable<Awaited<ReturnType<typeof openStream>>>

/**
 * Resumes a connector topic from before `window + 2` records: the reference announces the two it no longer replays
 * with one `gap` (its `from..to` a range of seqs) and replays the newest `window`, each once, in order.
 */
async function resumePastWindow(ctx: CheckContext, s: Stream, window: number): Promise<void> {
  const connector = ctx.name('conn-gap')
  const topic = `connector:${connector}`
  const records = batch(ctx, window + 2)
  expectStatus(
    await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, { records }),
    202,
    `ingesting ${records.length} records`,
  )
  s.ws.send(JSON.stringify({ type: 'subscribe', topics: [topic], since: { [topic]: 0 } }))
  const gap = await s.next(
    (m) => (m.type === 'gap' && m.topic === topic) || m.type === 'error',
    ctx.config.waitMs,
  )
  assert(
    gap?.type === 'gap' &&
      Number.isInteger(gap.from) &&
      Number.isInteger(gap.to) &&
      Number(gap.to) >= Number(gap.from),
    `resuming ${topic} from 0 past ${records.length} records (declared replay window ${window}) announced no gap: ${short(gap)}`,
  )
  const last = String(records.at(-1)!.id)
  await s.next((m) => m.type === 'record' && (m.record as Json | undefined)?.id === last, ctx.config.waitMs)
  const replayed = s.messages
    .filter((m) => m.type === 'record' && m.topic === topic)
    .map((m) => String((m.record as Json | undefined)?.id))
  const newest = records.slice(2).map((r) => String(r.id))
  assert(
    JSON.stringify(replayed) === JSON.stringify(newest),
    `after the gap, ${topic} replayed ${replayed.length} records ${short(replayed)}, expected the newest ${window} once each in order`,
  )
}

export const streamProtocolChecks: Check[] = [
  {
    id: 'stream.protocol-messages',
    title:
      'Over the stream, ingest answers ingested (its ref echoed) and pushes the record, the runs topic pushes a started run’s events, unsubscribe answers unsubscribed, a resume past the declared replay window announces a gap, and heartbeats come',
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
        const { runId } = await ctx.fx.startRun(await ctx.fx.agent())
        const event = await s.next((m) => m.type === 'event' && JSON.stringify(m.event).includes(runId), wait)
        assert(event, `no event of run ${runId} reached the runs topic within ${wait} ms`)
        s.ws.send(JSON.stringify({ type: 'unsubscribe', topics: [topic] }))
        const gone = await s.next((m) => m.type === 'unsubscribed' || m.type === 'error', wait)
        assert(
          gone?.type === 'unsubscribed' && gone.topic === topic,
          `unsubscribing from ${topic} answered ${short(gone)}`,
        )
        const window = ctx.config.stream.replayWindow
        if (window !== undefined) await resumePastWindow(ctx, s, window)
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
