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
import { tokenName } from '../config.js'
import type { Json } from '../fixtures.js'
import { obj } from '../http.js'
import { assert, fail, skip } from '../types.js'
import { short, sleep } from '../wait.js'
import { envelopeProblems, isRfc3339 } from './assertions.js'
import { batch, ingestAccepted } from './ingest.js'
import { QUOTA_LANE } from './quotas.js'
import { LIMITED_LANE, SOCKET_OPERATIONS_PAST_LIMIT } from './ratelimit.js'
import { assertResumedPastWindow, connect, type Opened, openStream, type RefusedUpgrade } from './stream.js'
import { UNHELD_INTEGER } from './validation.js'

type Stream = NonNullable<Awaited<ReturnType<typeof openStream>>>

/** The reference profile's push of the record `id` (a `record` message carrying it). */
const recordNamed = (id: unknown) => (m: Json) =>
  m.type === 'record' && (m.record as Json | undefined)?.id === id

/**
 * Resumes a connector topic from before `window + 2` records: the reference announces the two it no longer replays
 * with one `gap` (its `from..to` a range of seqs) and replays the newest `window`, each once, in order.
 */
async function resumePastWindow(ctx: CheckContext, s: Stream, window: number): Promise<void> {
  const connector = ctx.name('conn-gap')
  const topic = `connector:${connector}`
  const records = batch(ctx, window + 2)
  await ingestAccepted(ctx, connector, records, `ingesting ${records.length} records`)
  s.ws.send(JSON.stringify({ type: 'subscribe', topics: [topic], since: { [topic]: 0 } }))
  const gap = await s.next(
    (m) => (m.type === 'gap' && m.topic === topic) || m.type === 'error',
    ctx.config.waitMs,
  )
  const last = String(records.at(-1)!.id)
  if (gap?.type === 'gap') await s.next(recordNamed(last), ctx.config.waitMs)
  const replayed = s.messages
    .filter((m) => m.type === 'record' && m.topic === topic)
    .map((m) => (m.record as Json | undefined)?.id)
  assertResumedPastWindow(`resuming ${topic} from 0`, gap, replayed, records, window)
}

/** Pushes judged by `stream.pushed-promptly`, and how many of them may come later than PROMPT_MS. */
const PROMPT_SAMPLES = 8
const PROMPT_LATE_ALLOWED = 2
/**
 * What "promptly" means there: well past a loaded machine's pause (the clean reference pushes in milliseconds), well
 * short of the reference's fallback poll (AGENTOPS_STREAM_FALLBACK_POLL_MS, 2 s), which would deliver at a uniformly
 * random point within its period: a server that waited for the poll would come within PROMPT_MS a quarter of the
 * time, so in at least 6 of 8 pushes about once in 250 runs.
 */
const PROMPT_MS = 500

/**
 * How long each of PROMPT_SAMPLES pushes took, from `cause` (an ingest's 202, a run start's 201) answering to the
 * pushed message `pushed(token)` names arriving; stops at the first that misses `waitMs`, or once more than
 * PROMPT_LATE_ALLOWED were late. Returns the latencies in ms (Infinity for one that never came).
 */
async function pushLatencies(
  s: Stream,
  waitMs: number,
  cause: () => Promise<string>,
  pushed: (token: string) => (m: Json) => boolean,
): Promise<number[]> {
  const latencies: number[] = []
  for (let i = 0; i < PROMPT_SAMPLES; i++) {
    const token = await cause()
    const answered = performance.now()
    const got = await s.next(pushed(token), waitMs)
    latencies.push(got ? performance.now() - answered : Number.POSITIVE_INFINITY)
    if (!got || latencies.filter((ms) => ms > PROMPT_MS).length > PROMPT_LATE_ALLOWED) break
  }
  return latencies
}

/** Subscribes with the reference profile's message and waits for each topic's acknowledgement. */
async function subscribeEach(s: Stream, topics: string[], wait: number): Promise<void> {
  s.ws.send(JSON.stringify({ type: 'subscribe', topics }))
  for (const t of topics) {
    const ack = await s.next((m) => (m.type === 'subscribed' && m.topic === t) || m.type === 'error', wait)
    assert(ack?.type === 'subscribed', `subscribing to ${t} answered ${short(ack)}`)
  }
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
      // A second connection that sends nothing at all, only answering pings as every WebSocket client does.
      const idle = await openStream(ctx, ctx.config.tokens.primary)
      try {
        if (!idle) fail('the stream refused the primary token a second connection')
        const connector = ctx.name('conn-proto')
        const topic = `connector:${connector}`
        const wait = ctx.config.waitMs
        await subscribeEach(s, [topic, 'runs'], wait)
        const [record] = batch(ctx, 1)
        const ref = ctx.name('ingest-ref')
        s.ws.send(JSON.stringify({ type: 'ingest', ref, connector_id: connector, records: [record] }))
        const ingested = await s.next((m) => m.ref === ref, wait)
        assert(
          ingested?.type === 'ingested' && ingested.accepted === 1 && ingested.rejected === 0,
          `an ingest message of one good record answered ${short(ingested)}`,
        )
        const pushed = await s.next(recordNamed(record!.id), wait)
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
        // Unsubscribed, the topic's records no longer come.
        const [late] = batch(ctx, 1)
        await ingestAccepted(ctx, connector, [late!], 'ingest after unsubscribing')
        const after = await s.next((m) => JSON.stringify(m).includes(String(late!.id)), 1000)
        assert(!after, `a record of ${topic} came after unsubscribing from it: ${short(after)}`)
        const window = ctx.config.stream.replayWindow
        if (window !== undefined) await resumePastWindow(ctx, s, window)
        const beat = await s.next((m) => m.type === 'heartbeat', wait)
        assert(
          beat,
          `no heartbeat within ${wait} ms (the reference beats every AGENTOPS_STREAM_HEARTBEAT_MS; --wait-ms bounds the wait)`,
        )
        // The connection that sent nothing but answered the pings stays connected: two beats reach it, and it
        // still answers a ping.
        const first = await idle.next((m) => m.type === 'heartbeat', wait)
        const second = await idle.next((m) => m.type === 'heartbeat' && m !== first, wait)
        assert(
          first && second,
          `a connection that sent nothing but answered the pings got ${first ? 'one heartbeat' : 'no heartbeat'} within ${wait} ms, not two (dropped as if dead?)`,
        )
        const from = idle.messages.length
        idle.ws.send(JSON.stringify({ type: 'ping' }))
        const pong = await idle.next((m) => m.type === 'pong' && idle.messages.indexOf(m) >= from, wait)
        assert(pong, 'after two heartbeats, the connection that had sent nothing got no pong')
      } finally {
        s.close()
        idle?.close()
      }
    },
  },
  {
    id: 'stream.pushed-promptly',
    title:
      'A record or a run’s event reaches a live subscriber promptly: 6 of 8 pushes within 500 ms of the 202 or 201 that committed them',
    level: 'profile',
    clauses: ['S1.6', 'S4.10'],
    // On a connector and runs of its own, beside the serial checks: the 500 ms bound is far above what a server busy
    // with them adds to a push, and two late pushes of eight are allowed.
    overlap: true,
    async run(ctx) {
      // §4 "The server pushes records, with lineage, as they land" names no bound. The reference's choice: a commit
      // wakes the topics it concerns at once (its change feed), and its periodic poll only repairs a missed wake-up.
      const s = await openStream(ctx, ctx.config.tokens.primary)
      if (!s) fail('the stream refused the primary token')
      try {
        const connector = ctx.name('conn-prompt')
        const topic = `connector:${connector}`
        const wait = ctx.config.waitMs
        await subscribeEach(s, [topic, 'runs'], wait)
        const agent = await ctx.fx.agent()
        const judged: [string, number[]][] = [
          [
            `records of ${topic}`,
            await pushLatencies(
              s,
              wait,
              async () => {
                const [record] = batch(ctx, 1)
                await ingestAccepted(ctx, connector, [record!])
                return String(record!.id)
              },
              recordNamed,
            ),
          ],
          [
            'events of started runs on the runs topic',
            await pushLatencies(
              s,
              wait,
              async () => (await ctx.fx.startRun(agent)).runId,
              (runId) => (m) => m.type === 'event' && JSON.stringify(m.event).includes(runId),
            ),
          ],
        ]
        const wrong = judged.flatMap(([what, ms]) => {
          const late = ms.filter((t) => t > PROMPT_MS).length
          const shown = ms.map((t) => (Number.isFinite(t) ? `${Math.round(t)}` : 'never')).join(', ')
          return late > PROMPT_LATE_ALLOWED || ms.length < PROMPT_SAMPLES
            ? [`${what}: ${late} of ${ms.length} pushes later than ${PROMPT_MS} ms (ms: ${shown})`]
            : []
        })
        assert(wrong.length === 0, wrong.join('; '))
      } finally {
        s.close()
      }
    },
  },
]

/** One malformed client message, what the reference profile answers it with, and why (docs/stream.md). */
interface BadMessage {
  what: string
  /** The frame's text. */
  text: string
  /** A word the refusal's message must name: the member at fault (or "JSON" / "object" for the frame itself). */
  names: string
  /** The `ref` the refusal must echo, when the message carries one the profile echoes. */
  ref?: string
}

/**
 * The malformed messages of the reference profile's protocol (docs/stream.md "Client messages"): each is refused
 * with one `error` message carrying the spec §7 envelope (code `invalid_request`, a message naming the member at
 * fault, a `detail` object and a `request_id`), echoing the message's `ref` when it is a string of at most 128
 * characters, about no topic, and the socket stays open.
 */
function badMessages(topic: string): BadMessage[] {
  const json = (what: string, message: Json, names: string, ref?: string): BadMessage => ({
    what,
    text: JSON.stringify(ref === undefined ? message : { ...message, ref }),
    names,
    ...(ref === undefined ? {} : { ref }),
  })
  const long = (n: number) => `connector:${'c'.repeat(n - 'connector:'.length)}`
  const ref128 = `r${'8'.repeat(127)}`
  return [
    { what: 'a frame that is not JSON', text: '{"type": "subscribe",', names: 'not valid JSON' },
    { what: 'a JSON array', text: JSON.stringify([{ type: 'ping' }]), names: 'object' },
    { what: 'a JSON null', text: 'null', names: 'object' },
    json('an unknown type', { type: 'listen', topics: [topic] }, 'type', 'r-type'),
    json('a message without a type', { topics: [topic] }, 'type', 'r-no-type'),
    json('topics that are a string', { type: 'subscribe', topics: topic }, 'topics', 'r-string'),
    json('an empty topics array', { type: 'subscribe', topics: [] }, 'topics', 'r-empty'),
    json('101 topics', { type: 'subscribe', topics: Array(101).fill(topic) }, 'topic', 'r-101'),
    json('a topic that is a number', { type: 'subscribe', topics: [topic, 7] }, 'topic', 'r-number'),
    json('an empty topic', { type: 'subscribe', topics: [''] }, 'topic', 'r-empty-topic'),
    json('a topic of 257 characters', { type: 'subscribe', topics: [long(257)] }, 'topic', 'r-257'),
    json('unsubscribe with no topics', { type: 'unsubscribe' }, 'topics', 'r-unsub'),
    json('since that is a number', { type: 'subscribe', topics: [topic], since: 3 }, 'since', 'r-since'),
    json(
      'a negative since',
      { type: 'subscribe', topics: [topic], since: { [topic]: -1 } },
      'since',
      'r-neg',
    ),
    json(
      'a fractional since',
      { type: 'subscribe', topics: [topic], since: { [topic]: 1.5 } },
      'since',
      'r-frac',
    ),
    json(
      'a since in a string',
      { type: 'subscribe', topics: [topic], since: { [topic]: '2' } },
      'since',
      'r-str',
    ),
    json(
      'since that is an array',
      { type: 'subscribe', topics: [topic], since: [] },
      'since',
      'r-since-array',
    ),
    json('since that is null', { type: 'subscribe', topics: [topic], since: null }, 'since', 'r-since-null'),
    json('an ingest without connector_id', { type: 'ingest', records: [] }, 'connector_id', 'r-no-conn'),
    json(
      'an ingest under a connector id outside the pattern',
      { type: 'ingest', connector_id: 'bad id!', records: [] },
      'connector_id',
      ref128,
    ),
    json(
      'an ingest whose records are no array',
      { type: 'ingest', connector_id: 'c1', records: {} },
      'records',
      'r-rec',
    ),
    // A ref the profile does not echo: not a string, or longer than 128 characters.
    json('an ingest with a numeric ref', { type: 'ingest', connector_id: 'c1', records: [], ref: 5 }, 'ref'),
    json(
      'an ingest with a ref of 129 characters',
      { type: 'ingest', connector_id: 'c1', records: [], ref: `${ref128}9` },
      'ref',
    ),
    json(
      'an unknown type with a ref that is an array',
      { type: 'listen', topics: [topic], ref: ['r'] },
      'type',
    ),
    // Text that cannot be stored (a NUL), and JSON nested past the profile's 64 levels.
    json('a NUL in a member', { type: 'subscribe', topics: [`${topic}\u0000`] }, 'topics', 'r-nul'),
    json(
      'a NUL in a member, with a numeric ref',
      { type: 'subscribe', topics: [`${topic}\u0000`], ref: 5 },
      'topics',
    ),
    {
      what: 'JSON nested 70 levels deep',
      text: `{"type":"ping","x":${'['.repeat(70)}${']'.repeat(70)}}`,
      // The member at fault, as a path from the message.
      names: 'message.x',
    },
  ]
}

/**
 * The bounds of `topics` from inside (docs/stream.md "`topics`: 1 to 100 strings"): 100 copies of one topic are one
 * topic, acknowledged once, and acknowledged once again when sent again (the topic is held); a topic of 256
 * characters is no malformed message but a topic the profile does not know, refused by name; an unsubscribe is
 * acknowledged per topic, one the connection does not hold too.
 */
async function topicBounds(ctx: CheckContext, s: Stream, topic: string): Promise<void> {
  const wait = ctx.config.waitMs
  const acks = (from: number) =>
    s.messages.slice(from).filter((m) => m.type === 'subscribed' && m.topic === topic).length
  for (const round of ['first', 'again']) {
    const from = s.messages.length
    s.ws.send(JSON.stringify({ type: 'subscribe', topics: Array(100).fill(topic) }))
    const ack = await s.next(
      (m) =>
        s.messages.indexOf(m) >= from &&
        ((m.type === 'subscribed' && m.topic === topic) || m.type === 'error'),
      wait,
    )
    assert(
      ack?.type === 'subscribed',
      `subscribing to 100 copies of ${topic} (${round}) answered ${short(ack)}`,
    )
    // A ping after: its pong comes once every acknowledgement of the held topic has gone out.
    s.ws.send(JSON.stringify({ type: 'ping' }))
    await s.next((m) => s.messages.indexOf(m) > from && m.type === 'pong', wait)
    assert(
      acks(from) === 1,
      `subscribing to 100 copies of ${topic} (${round}) was acknowledged ${acks(from)} times, not once`,
    )
  }
  // Subscribed twice, the topic is still held once: a record landing on it comes once.
  const [record] = batch(ctx, 1)
  const id = String(record!.id)
  await ingestAccepted(ctx, topic.slice('connector:'.length), [record!])
  const carries = recordNamed(id)
  await s.next(carries, wait)
  await sleep(300) // a second copy pushed right after would show now
  const copies = s.messages.filter(carries).length
  assert(copies === 1, `a topic subscribed to twice pushed a record ${copies} times, not once`)
  const long = `connector:${'c'.repeat(246)}`
  let from = s.messages.length
  s.ws.send(JSON.stringify({ type: 'subscribe', topics: [long] }))
  const refused = await s.next((m) => s.messages.indexOf(m) >= from && m.type !== 'heartbeat', wait)
  assert(
    refused,
    `a topic of 256 characters no connector id fits got no answer within ${wait} ms (the socket ${SOCKET_STATES[s.ws.readyState] ?? s.ws.readyState}; since it was sent: ${short(s.messages.slice(from))})`,
  )
  const unknown = refused?.error as Json | undefined
  assert(
    refused?.type === 'error' &&
      refused.topic === long &&
      unknown?.code === 'invalid_request' &&
      String(unknown.message).includes('topic') &&
      (unknown.detail as Json | undefined)?.topic === long,
    `a topic of 256 characters no connector id fits was answered ${short(refused)}, not an invalid_request error about that topic (named in its message and detail.topic)`,
  )
  from = s.messages.length
  const unheld = `connector:${ctx.name('conn-unheld')}`
  s.ws.send(JSON.stringify({ type: 'unsubscribe', topics: [topic, unheld] }))
  for (const t of [topic, unheld]) {
    const gone = await s.next(
      (m) => s.messages.indexOf(m) >= from && m.type === 'unsubscribed' && m.topic === t,
      wait,
    )
    assert(gone, `unsubscribing from ${t} was not acknowledged: ${short(s.messages.slice(from))}`)
  }
}

/** A WebSocket's readyState, named. */
const SOCKET_STATES = ['connecting', 'open', 'closing', 'closed']

/** The next message after index `from` that answers a client message (anything but a heartbeat). */
async function answerAfter(s: Stream, from: number, wait: number): Promise<Json | undefined> {
  return s.next((m) => s.messages.indexOf(m) >= from && m.type !== 'heartbeat', wait)
}

export const streamMessageRulesChecks: Check[] = [
  {
    id: 'stream.bad-messages-refused',
    title:
      'A malformed stream message is refused with one invalid_request error in the §7 envelope, naming the member at fault and echoing its ref; the socket stays open',
    level: 'profile',
    clauses: ['S1.2', 'S7.1'],
    async run(ctx) {
      const s = await openStream(ctx, ctx.config.tokens.primary)
      if (!s) fail('the stream refused the primary token')
      try {
        const topic = `connector:${ctx.name('conn-bad-msg')}`
        for (const bad of badMessages(topic)) {
          const from = s.messages.length
          s.ws.send(bad.text)
          const m = await answerAfter(s, from, ctx.config.waitMs)
          assert(m, `${bad.what} got no answer within ${ctx.config.waitMs} ms`)
          const error = m.error as Json | undefined
          assert(
            m.type === 'error' && error?.code === 'invalid_request',
            `${bad.what} was answered ${short(m)}, not an invalid_request error`,
          )
          assert(
            typeof error.message === 'string' && error.message.includes(bad.names),
            `the refusal of ${bad.what} does not name ${bad.names} in its message: ${short(m)}`,
          )
          assert(
            typeof error.request_id === 'string' &&
              error.request_id !== '' &&
              error.detail !== null &&
              typeof error.detail === 'object',
            `the refusal of ${bad.what} lacks the envelope's detail object or request_id: ${short(m)}`,
          )
          assert(
            m.ref === bad.ref,
            `the refusal of ${bad.what} carries ref ${short(m.ref)}, not ${short(bad.ref)}`,
          )
          assert(!('topic' in m), `the refusal of ${bad.what} names a topic, as if about one: ${short(m)}`)
        }
        const from = s.messages.length
        s.ws.send(JSON.stringify({ type: 'ping' }))
        const pong = await answerAfter(s, from, ctx.config.waitMs)
        assert(
          pong?.type === 'pong' && isRfc3339(pong.ts),
          `after the refusals, ping answered ${short(pong)}, not a pong with an RFC 3339 ts`,
        )
        // Nothing else answered: one message for each refusal, then the pong.
        const extra = s.messages.filter((m) => m.type !== 'heartbeat').length - badMessages(topic).length - 1
        assert(extra === 0, `the refusals were answered with ${extra} more messages than one each`)
        await topicBounds(ctx, s, topic)
      } finally {
        s.close()
      }
    },
  },
]

/** The answer over `s` to the ingest message with `ref` (an `ingested` or an `error` carrying that ref). */
async function ingestOver(s: Stream, ref: string, connector: string, records: unknown[], wait: number) {
  s.ws.send(JSON.stringify({ type: 'ingest', ref, connector_id: connector, records }))
  return s.next((m) => m.ref === ref && (m.type === 'ingested' || m.type === 'error'), wait)
}

/** The reference's largest request body (AGENTOPS_MAX_BODY_BYTES' default). */
const FULL_REST_BODY = 1024 * 1024

/** 100 records whose REST body (`{"records":[...]}`) is exactly `bytes` long (ASCII, so bytes are characters). */
function fullBatch(ctx: CheckContext, bytes: number): Json[] {
  const records = batch(ctx, 100)
  const size = () => JSON.stringify({ records }).length
  const pad = Math.floor((bytes - size()) / records.length)
  for (const r of records) (r.body as Json).text = `${String((r.body as Json).text)} ${'x'.repeat(pad - 1)}`
  const last = records[records.length - 1]!.body as Json
  last.text = `${String(last.text)}${'y'.repeat(bytes - size())}`
  return records
}

streamMessageRulesChecks.push({
  id: 'stream.socket-ingest-judged-like-rest',
  title:
    'A batch sent over the stream is judged like the REST batch: refused without ingest:write (policy_denied), taken from a key holding it as ingest:*, taken when as large as REST takes, over the record limit with the REST refusal’s code, a number no double holds as REST judges it, past the 16 that may wait refused rate_limited, and a partly bad batch answered with its counts, rejections and lineage_root, its ref and connector id echoed',
  level: 'profile',
  clauses: ['S1.6', 'S7.2'],
  async run(ctx) {
    // §1 "Ingestion feeds records into the service by connector, either as a REST batch or over a streaming
    // socket": the socket's messages are the profile's (§4 "not shown"); docs/stream.md "judged and stored exactly
    // like POST /v1/grid/connectors/{id}/ingest".
    const wait = ctx.config.waitMs
    const connector = ctx.name('conn-sock-ingest')
    const narrow = ctx.as('narrowScope').token
    if (narrow) {
      const n = await openStream(ctx, narrow)
      if (!n) fail('the narrow token could not open the stream')
      try {
        const refused = await ingestOver(n, 'r-narrow', connector, batch(ctx, 1), wait)
        const error = refused?.error as Json | undefined
        const detail = error?.detail as Json | undefined
        assert(
          refused?.type === 'error' && error?.code === 'policy_denied',
          `a batch over the stream from a token without ingest:write answered ${short(refused)}, not policy_denied`,
        )
        for (const field of ['envelope', 'violation', 'observed', 'limit', 'escalation_queue'])
          assert(
            detail && field in detail,
            `the policy_denied refusal's detail lacks ${field}: ${short(refused)}`,
          )
        assert(
          JSON.stringify(detail?.limit).includes('ingest:write'),
          `the policy_denied refusal's detail.limit does not name the scope ingest:write: ${short(refused)}`,
        )
      } finally {
        n.close()
      }
    }
    // A key that holds ingest:write through its family's wildcard (the second workspace's key holds every family as
    // `family:*`) is taken, as REST takes it.
    const wildcard = ctx.config.tokens.secondWorkspace
    if (wildcard) {
      const w = await openStream(ctx, wildcard)
      if (!w) fail('the second workspace token could not open the stream')
      try {
        const taken = await ingestOver(w, 'r-wildcard', connector, batch(ctx, 1), wait)
        assert(
          taken?.type === 'ingested' && taken.accepted === 1,
          `a batch over the stream from the second workspace's key (every family as a wildcard, ingest:* among them) answered ${short(taken)}, not ingested`,
        )
      } finally {
        w.close()
      }
    } else ctx.partial(`the wildcard key part did not run: no ${tokenName('secondWorkspace')} given`)
    const s = await openStream(ctx, ctx.config.tokens.primary)
    if (!s) fail('the stream refused the primary token')
    try {
      const big = batch(ctx, 501)
      const rest = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, { records: big })
      const restCode = ((rest.body as Json | undefined)?.error as Json | undefined)?.code
      assert(
        rest.status >= 400 && typeof restCode === 'string',
        `REST took a batch of 501 records: ${rest.status}`,
      )
      const over = await ingestOver(s, 'r-big', connector, big, wait)
      assert(
        over?.type === 'error' && (over.error as Json | undefined)?.code === restCode,
        `a batch of 501 records over the stream answered ${short(over)}, not the REST refusal's ${restCode}`,
      )
      // A record holding an integer no double holds (validation.numbers-kept-or-refused) is judged as REST judges
      // it: the socket keeps nothing REST refuses, and refuses nothing REST keeps.
      const withUnheld = (records: Json[]) =>
        JSON.stringify(records).replace('"n":"unheld"', `"n":${UNHELD_INTEGER}`)
      const unheldBatch = () =>
        batch(ctx, 1).map((r) => ({ ...r, body: { ...(r.body as Json), n: 'unheld' } }))
      const restUnheld = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, undefined, {
        rawBody: `{"records":${withUnheld(unheldBatch())}}`,
      })
      s.ws.send(
        `{"type":"ingest","ref":"r-unheld","connector_id":${JSON.stringify(connector)},"records":${withUnheld(unheldBatch())}}`,
      )
      const overUnheld = await s.next(
        (m) => m.ref === 'r-unheld' && (m.type === 'ingested' || m.type === 'error'),
        wait,
      )
      const restUnheldCode = obj(obj(restUnheld.body).error).code
      assert(
        restUnheld.status === 400
          ? overUnheld?.type === 'error' && obj(overUnheld.error).code === restUnheldCode
          : overUnheld?.type === 'ingested' && overUnheld.accepted === obj(restUnheld.body).accepted,
        `a record holding ${UNHELD_INTEGER} answered ${restUnheld.status} ${short(restUnheld.body)} over REST but ${short(overUnheld)} over the stream`,
      )
      if (overUnheld?.type === 'error')
        assert(
          envelopeProblems(overUnheld).length === 0,
          `the stream's refusal of a record holding ${UNHELD_INTEGER} breaks the envelope: ${envelopeProblems(overUnheld).join('; ')}`,
        )
      // A batch as large as REST takes (its REST body 40 bytes under the reference's 1 MiB, AGENTOPS_MAX_BODY_BYTES'
      // default) is taken over the stream too, though the message around it (type, connector id, ref) passes 1 MiB.
      const full = fullBatch(ctx, FULL_REST_BODY - 40)
      const fullOver = await ingestOver(s, 'r-full', connector, full, wait)
      assert(
        fullOver?.type === 'ingested' && fullOver.accepted === full.length,
        `a batch whose REST body is ${FULL_REST_BODY - 40} bytes, sent over the stream, answered ${short(fullOver)}${s.ws.readyState === s.ws.OPEN ? '' : ` and the connection closed (${s.ws.readyState})`}, not ingested`,
      )
      // More batches than may wait at once (16), each sent once the one before is answered: none is refused.
      for (let i = 0; i < 17; i++) {
        const one = await ingestOver(s, `r-seq-${i}`, connector, batch(ctx, 1), wait)
        assert(
          one?.type === 'ingested' && one.accepted === 1,
          `batch ${i + 1} of 17 sent one after the other over the stream answered ${short(one)}`,
        )
      }
      // More batches than may wait at once, sent together: each is answered by its ref, those past the 16 that may
      // wait (docs/stream.md) refused rate_limited at once, the others taken; the connection stays open. The first
      // is a full batch, which the server stores for a while, and the small ones sent behind it reach the server in
      // the same reads as its end: they are all waiting at once, however fast the server stores them.
      const BURST = 30
      const head = fullBatch(ctx, FULL_REST_BODY - 40)
      s.ws.send(JSON.stringify({ type: 'ingest', ref: 'r-burst-0', connector_id: connector, records: head }))
      for (let i = 1; i < BURST; i++)
        s.ws.send(
          JSON.stringify({
            type: 'ingest',
            ref: `r-burst-${i}`,
            connector_id: connector,
            records: batch(ctx, 1),
          }),
        )
      const answers: Json[] = []
      for (let i = 0; i < BURST; i++) {
        const answer = await s.next(
          (m) => m.ref === `r-burst-${i}` && (m.type === 'ingested' || m.type === 'error'),
          wait,
        )
        if (!answer)
          fail(
            `batch ${i + 1} of ${BURST} sent together over the stream was answered nothing within ${wait} ms`,
          )
        answers.push(answer)
      }
      const refused = answers.filter((a) => a.type === 'error')
      assert(
        refused.length > 0 && refused.every((a) => obj(a.error).code === 'rate_limited'),
        `${BURST} batches sent together over one connection had ${refused.length} refused (${short(refused[0])}), not those past the 16 that may wait for their answer refused rate_limited`,
      )
      // Each refusal in the envelope, its detail naming the bound a client is to keep to.
      const unlike = refused.find(
        (a) => envelopeProblems(a).length > 0 || obj(obj(a.error).detail).limit !== 16,
      )
      assert(
        unlike === undefined,
        `a batch refused for the batches waiting on the connection was answered ${short(unlike)}: ${unlike && envelopeProblems(unlike).length > 0 ? envelopeProblems(unlike).join('; ') : 'its detail names no limit 16'}`,
      )
      assert(
        BURST - refused.length >= 16 && s.ws.readyState === s.ws.OPEN,
        `of ${BURST} batches sent together only ${BURST - refused.length} were taken (the 16 that may wait are), or the connection closed (${s.ws.readyState})`,
      )
      // A ref is the client's option: a batch without one is taken, and answered without one.
      s.ws.send(JSON.stringify({ type: 'ingest', connector_id: connector, records: batch(ctx, 1) }))
      const unnamed = await s.next(
        (m) => (m.type === 'ingested' || m.type === 'error') && m.ref === undefined,
        wait,
      )
      assert(
        unnamed?.type === 'ingested' && unnamed.accepted === 1,
        `a batch of one good record without a ref answered ${short(unnamed)}, not ingested`,
      )
      const [good, bad] = batch(ctx, 2)
      const { ts: _ts, ...withoutTs } = bad!
      const mixed = await ingestOver(s, 'r-mixed', connector, [good, withoutTs], wait)
      assert(
        mixed?.type === 'ingested' &&
          mixed.connector_id === connector &&
          mixed.accepted === 1 &&
          mixed.rejected === 1 &&
          typeof mixed.lineage_root === 'string' &&
          Array.isArray(mixed.rejections) &&
          mixed.rejections.length === 1,
        `a batch of one good record and one without ts answered ${short(mixed)}, not ingested with its counts, one rejection, lineage_root and connector_id`,
      )
    } finally {
      s.close()
    }
  },
})

streamMessageRulesChecks.push({
  id: 'stream.socket-ingest-rate-limited',
  lane: LIMITED_LANE,
  title:
    "A batch sent over the stream counts against its workspace's rate limit as a REST batch does: past it, a batch is answered an error rate_limited and the socket stays open",
  level: 'profile',
  clauses: ['S1.6', 'S8.5', 'S8.9'],
  async run(ctx) {
    // §8 scopes the rate limit per workspace and §1 makes the socket a way in for ingestion like REST; whether a
    // socket's messages count is the profile's (§4's messages are "not shown"): the reference counts each batch.
    const token = ctx.config.tokens.rateLimited
    if (!token) skip(`no ${tokenName('rateLimited')} given`)
    const most = SOCKET_OPERATIONS_PAST_LIMIT
    const s = await openStream(ctx, token)
    if (!s) fail('the stream refused the small-limit token')
    try {
      const connector = ctx.name('conn-sock-limited')
      let refusal: Json | undefined
      let taken = 0
      for (let i = 0; i < most && !refusal; i++) {
        const answer = await ingestOver(s, `r-limited-${i}`, connector, batch(ctx, 1), ctx.config.waitMs)
        if (!answer)
          fail(`batch ${i + 1} over the stream was answered nothing within ${ctx.config.waitMs} ms`)
        if (answer.type === 'error') refusal = answer
        else taken += 1
      }
      if (!refusal)
        fail(
          `${most} batches over one stream socket of the small-limit workspace were all taken: none counted against its rate limit`,
        )
      assert(
        obj(refusal.error).code === 'rate_limited',
        `after ${taken} batches taken, one was refused with ${short(refusal)}, not rate_limited`,
      )
      assert(
        s.ws.readyState === s.ws.OPEN,
        `the socket closed after a rate-limited batch (state ${s.ws.readyState})`,
      )
    } finally {
      s.ws.terminate()
    }
  },
})

streamMessageRulesChecks.push({
  id: 'stream.subscriptions-per-connection',
  title:
    'A connection holds at most 100 topics: the 101st is refused by name with quota_exceeded (stream_subscriptions_per_socket), and an unsubscribe makes room',
  level: 'profile',
  clauses: ['S5.3'],
  async run(ctx) {
    // The profile's bound (docs/stream.md "Subscriptions per connection"): every topic is read again on each
    // wake-up, so one socket may not hold without bound. No spec sentence names it (§4 "not shown").
    const wait = ctx.config.waitMs
    const s = await openStream(ctx, ctx.config.tokens.primary)
    if (!s) fail('the stream refused the primary token')
    try {
      const base = ctx.name('conn-quota')
      const topics = Array.from({ length: 101 }, (_, i) => `connector:${base}-${i}`)
      // A subscribe names at most 100 topics: 50, then 51 in one message, whose last is one too many (what the
      // connection holds and what one message adds count together).
      s.ws.send(JSON.stringify({ type: 'subscribe', topics: topics.slice(0, 50) }))
      s.ws.send(JSON.stringify({ type: 'subscribe', topics: topics.slice(50) }))
      const answered = () =>
        s.messages.filter(
          (m) => (m.type === 'subscribed' || m.type === 'error') && topics.includes(String(m.topic)),
        )
      await s.next(() => answered().length >= 101, wait)
      const acks = answered().filter((m) => m.type === 'subscribed')
      const refusals = answered().filter((m) => m.type === 'error')
      const refusal = refusals[0]
      const error = refusal?.error as Json | undefined
      const detail = error?.detail as Json | undefined
      assert(
        acks.length === 100 && refusals.length === 1 && refusal?.topic === topics[100],
        `subscribing to 50 topics, then 51 more, was answered with ${acks.length} subscribed and ${refusals.length} errors (${short(refusals)}), not 100 and one refusal of the last`,
      )
      assert(
        error?.code === 'quota_exceeded' &&
          detail?.quota === 'stream_subscriptions_per_socket' &&
          detail.limit === 100 &&
          detail.used === 100,
        `the 101st topic was refused with ${short(refusal)}, not quota_exceeded {quota: stream_subscriptions_per_socket, limit: 100, used: 100}`,
      )
      const from = s.messages.length
      s.ws.send(JSON.stringify({ type: 'unsubscribe', topics: [topics[0]] }))
      s.ws.send(JSON.stringify({ type: 'subscribe', topics: [topics[100]] }))
      const after = await s.next(
        (m) =>
          s.messages.indexOf(m) >= from &&
          m.topic === topics[100] &&
          (m.type === 'subscribed' || m.type === 'error'),
        wait,
      )
      assert(
        after?.type === 'subscribed',
        `after unsubscribing from one topic, subscribing to the refused one answered ${short(after)}`,
      )
    } finally {
      s.close()
    }
  },
})

/**
 * Opens the stream with `token` until the deployment refuses one: the connections it took and its refusal. Starts
 * again (within `waitMs`) while the refusal counts more connections than were opened: slots of sockets an earlier
 * check closed may still be held for a moment.
 */
async function fillSlots(
  ctx: CheckContext,
  token: string,
  most: number,
): Promise<{ open: Opened[]; refusal?: RefusedUpgrade; detail?: Json }> {
  const deadline = Date.now() + ctx.config.waitMs
  for (;;) {
    const open: Opened[] = []
    let refusal: RefusedUpgrade | undefined
    while (!refusal && open.length < most) {
      const r = await connect(ctx, token)
      if ('ws' in r) open.push(r)
      else refusal = r
    }
    if (!refusal) return { open }
    const detail = obj(obj(parsed(refusal.body).error).detail)
    // Only a quota refusal counting more connections than these is worth a second try; anything else is judged now.
    const stale = typeof detail.used === 'number' && detail.used > open.length
    if (!stale || Date.now() >= deadline) return { open, refusal, detail }
    for (const s of open) s.close()
    await sleep(200)
  }
}

const parsed = (text: string | undefined): Json => {
  try {
    return obj(JSON.parse(text ?? ''))
  } catch {
    return {}
  }
}

streamMessageRulesChecks.push({
  id: 'stream.key-quotas',
  lane: QUOTA_LANE,
  title:
    'A key holds at most its stream_sockets_per_key connections and stream_subscriptions_per_key topics across them: the next upgrade is refused 403 quota_exceeded, the next topic refused by name; an unsubscribe or a closed connection gives the room back',
  level: 'profile',
  clauses: ['S5.3'],
  async run(ctx) {
    // The profile's bounds on what one key holds open (docs/stream.md): the quota-limited identity's workspace
    // sets small ones (the reference provisions 2 connections and 3 topics). No spec sentence names them.
    const token = ctx.config.tokens.quotaLimited
    if (!token) skip(`no ${tokenName('quotaLimited')} given`)
    const most = 10
    const { open, refusal, detail } = await fillSlots(ctx, token, most)
    try {
      // A key that took ten connections and was refused none keeps no such bound: the difference this check reports.
      if (!refusal)
        fail(
          `the quota-limited key opened ${most} stream connections and none was refused: no stream_sockets_per_key bound (the identity's key is to hold a few)`,
        )
      const error = obj(parsed(refusal.body).error)
      assert(
        refusal.refused === 403 &&
          error.code === 'quota_exceeded' &&
          detail?.quota === 'stream_sockets_per_key' &&
          detail.limit === open.length &&
          detail.used === open.length,
        `with ${open.length} connections open, the next upgrade was refused ${refusal.refused} ${short(refusal.body)}, not 403 quota_exceeded {quota: stream_sockets_per_key, limit: ${open.length}, used: ${open.length}}`,
      )
      assert(
        open.length >= 2,
        `the key may hold ${open.length} connection: too few to share topics between two`,
      )
      const [a, b] = open as [Opened, Opened]
      const wait = ctx.config.waitMs
      const base = ctx.name('key-topics')
      const answers = (s: Opened, topics: string[]) =>
        s.next(
          () =>
            topics.every((t) =>
              s.messages.some((m) => m.topic === t && (m.type === 'subscribed' || m.type === 'error')),
            ),
          wait,
        )
      const answerOf = (s: Opened, topic: string) =>
        s.messages.findLast((m) => m.topic === topic && (m.type === 'subscribed' || m.type === 'error'))
      // Topics on the first connection until one is refused (at most 20): the key's topic bound, held across both.
      const held: string[] = []
      let refusedTopic: Json | undefined
      for (let i = 0; i < 20 && !refusedTopic; i++) {
        const topic = `connector:${base}-a${i}`
        a.ws.send(JSON.stringify({ type: 'subscribe', topics: [topic] }))
        await answers(a, [topic])
        const answer = answerOf(a, topic)
        if (!answer) fail(`a subscribe to ${topic} was answered nothing within ${wait} ms`)
        if (answer.type === 'subscribed') held.push(topic)
        else refusedTopic = answer
      }
      if (!refusedTopic)
        fail(
          "the quota-limited key held 20 topics on one connection and none was refused: no stream_subscriptions_per_key bound (the identity's key is to hold a few topics)",
        )
      const topicDetail = obj(obj(refusedTopic.error).detail)
      assert(
        obj(refusedTopic.error).code === 'quota_exceeded' &&
          topicDetail.quota === 'stream_subscriptions_per_key' &&
          topicDetail.limit === held.length &&
          topicDetail.used === held.length,
        `with ${held.length} topics held, the next was refused with ${short(refusedTopic)}, not quota_exceeded {quota: stream_subscriptions_per_key, limit: ${held.length}, used: ${held.length}}`,
      )
      // The bound is the key's, not the connection's: the second connection is refused a topic too.
      const onB = `connector:${base}-b0`
      b.ws.send(JSON.stringify({ type: 'subscribe', topics: [onB] }))
      await answers(b, [onB])
      assert(
        answerOf(b, onB)?.type === 'error',
        `with the key's ${held.length} topics held on one connection, another connection was answered ${short(answerOf(b, onB))} for a topic`,
      )
      // An unsubscribe on one connection makes room on the other: for one topic. Asked for two in one message, the
      // first is taken and the second refused, and only refused: it is never opened besides.
      const from = a.messages.length
      a.ws.send(JSON.stringify({ type: 'unsubscribe', topics: [held[0]] }))
      await a.next((m) => a.messages.indexOf(m) >= from && m.type === 'unsubscribed', wait)
      const fromB = b.messages.length
      const beyond = `connector:${base}-b1`
      b.ws.send(JSON.stringify({ type: 'subscribe', topics: [onB, beyond] }))
      const afterUnsubscribe = await b.next(
        (m) =>
          b.messages.indexOf(m) >= fromB &&
          m.topic === onB &&
          (m.type === 'subscribed' || m.type === 'error'),
        wait,
      )
      assert(
        afterUnsubscribe?.type === 'subscribed',
        `after an unsubscribe on one connection, another was still refused the topic: ${short(answerOf(b, onB))}`,
      )
      const beyondAnswer = await b.next(
        (m) => b.messages.indexOf(m) >= fromB && m.topic === beyond && m.type === 'error',
        wait,
      )
      assert(
        obj(beyondAnswer?.error).code === 'quota_exceeded',
        `with room for one topic, the second of two asked for in one message was not refused quota_exceeded: the answers were ${short(b.messages.slice(fromB))}`,
      )
      // A topic refused and opened anyway would be acknowledged once its starting point is read: give it that long.
      const openedAnyway = await b.next(
        (m) => b.messages.indexOf(m) >= fromB && m.topic === beyond && m.type === 'subscribed',
        Math.min(wait, 500),
      )
      assert(
        openedAnyway === undefined,
        `the topic refused for the key's quota was acknowledged too (${short(openedAnyway)}): refused and opened`,
      )
      // A closed connection gives back its slot and its topics: a new connection opens and takes a topic.
      a.close()
      const deadline = Date.now() + wait
      let reopened: Opened | undefined
      let last: Opened | RefusedUpgrade | undefined
      while (!reopened && Date.now() < deadline) {
        last = await connect(ctx, token)
        if ('ws' in last) reopened = last
        else await sleep(100)
      }
      if (!reopened) fail(`after a connection of the key closed, a new one was still refused: ${short(last)}`)
      open.push(reopened)
      const onC = `connector:${base}-c0`
      reopened.ws.send(JSON.stringify({ type: 'subscribe', topics: [onC] }))
      const taken = await reopened.next(
        (m) => m.topic === onC && (m.type === 'subscribed' || m.type === 'error'),
        wait,
      )
      assert(
        taken?.type === 'subscribed',
        `after a connection holding ${held.length - 1} topics closed, a new one was refused a topic: ${short(answerOf(reopened, onC))}`,
      )
    } finally {
      for (const s of open) s.close()
    }
  },
})
