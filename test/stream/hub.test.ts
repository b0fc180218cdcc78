import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { unauthenticated } from '../../src/domain/errors.js'
import {
  MAX_PENDING_INGESTS,
  StreamConnection,
  type StreamPrincipal,
  type StreamSocket,
} from '../../src/stream/hub.js'
import { CLOSE_SLOW_CONSUMER } from '../../src/surface/slow-consumer.js'
import { TopicFeeds } from '../../src/surface/topic-feeds.js'
import type { StreamItem, TopicSource } from '../../src/surface/topic-sources.js'
import { Gate } from '../support/gate.js'
import { NO_INGESTION, STREAM_OPTIONS, UNBOUNDED_KEY_TOPICS } from '../support/stream-options.js'

class FakeSocket implements StreamSocket {
  bufferedAmount = 0
  sent: Record<string, unknown>[] = []
  closedWith: [number, string] | undefined
  terminated = false
  pings = 0
  send(data: string): void {
    this.sent.push(JSON.parse(data))
  }
  ping(): void {
    this.pings++
  }
  close(code: number, reason: string): void {
    this.closedWith = [code, reason]
  }
  terminate(): void {
    this.terminated = true
  }
  data(): number[] {
    return this.sent.filter((m) => m.type === 'record').map((m) => m.seq as number)
  }
}

/** A topic whose reads can be held open, to place a commit exactly inside a read. */
class FakeSource implements TopicSource {
  items: StreamItem[] = []
  private readonly readGate = new Gate()
  /** Holds `head()` open: it answers what is committed when released, like a query answered a round trip later. */
  private readonly headGate = new Gate()
  readsStarted = 0
  add(n: number): void {
    for (let i = 0; i < n; i++) {
      const seq = this.items.length + 1
      this.items.push({ seq, message: { type: 'record', topic: 'connector:c', seq } })
    }
  }
  hold(): void {
    this.readGate.hold()
  }
  release(): void {
    this.readGate.release()
  }
  holdHead(): void {
    this.headGate.hold()
  }
  releaseHead(): void {
    this.headGate.release()
  }
  async head() {
    await this.headGate.pass()
    return this.items.length
  }
  async resume(since: number, maxReplay: number) {
    const last = this.items.length
    return last - since <= maxReplay
      ? { after: since }
      : { after: last - maxReplay, gap: { from: since + 1, to: last - maxReplay } }
  }
  async read(after: number, limit: number) {
    this.readsStarted++
    // The snapshot is taken when the read starts, like a query that ran before a concurrent commit.
    const items = this.items.filter((i) => i.seq > after).slice(0, limit)
    await this.readGate.pass()
    return { items, scannedTo: items.at(-1)?.seq ?? after }
  }
}

const principal = (scopes: string[]): StreamPrincipal => ({
  workspaceId: 'ws_1',
  keyId: 'key_1',
  scopes,
  maxSubscriptions: 100,
  keyTopics: UNBOUNDED_KEY_TOPICS,
})

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r))
}

function setup(options = STREAM_OPTIONS, scopes = ['*']) {
  const socket = new FakeSocket()
  const source = new FakeSource()
  // The process's shared topic readers, as the hub passes them: the change feed's wake-ups reach a topic through them.
  const feeds = new TopicFeeds()
  const conn = new StreamConnection(
    socket,
    principal(scopes),
    () => source,
    options,
    new ManualClock(),
    NO_INGESTION,
    feeds,
  )
  return { socket, source, conn, feeds }
}

describe('StreamConnection delivery', () => {
  it('delivers a commit that lands while a read is in flight (the wake is not lost)', async () => {
    const { socket, source, conn, feeds } = setup()
    source.add(2)
    conn.handleText(
      JSON.stringify({ type: 'subscribe', topics: ['connector:c'], since: { 'connector:c': 0 } }),
    )
    await settle()
    expect(socket.data()).toEqual([1, 2])
    source.hold()
    feeds.wakeConnector('ws_1', 'c') // a read starts and sees nothing new
    await settle()
    source.add(1) // commit lands during that read …
    feeds.wakeConnector('ws_1', 'c') // … and its wake-up arrives while the pump is busy
    source.release()
    await settle()
    expect(socket.data()).toEqual([1, 2, 3])
  })

  it('a read the store fails: the client is told where to resume, the topic is dropped and its room given back', async () => {
    const socket = new FakeSocket()
    const source = new FakeSource()
    source.add(2)
    const failures: string[] = []
    let released = 0
    const conn = new StreamConnection(
      socket,
      {
        ...principal(['*']),
        keyTopics: {
          ...UNBOUNDED_KEY_TOPICS,
          release: async (n) => {
            released += n
          },
        },
      },
      () => source,
      { ...STREAM_OPTIONS, log: { error: (_fields, message) => failures.push(message) } },
      new ManualClock(),
      NO_INGESTION,
      new TopicFeeds(),
    )
    conn.handleText(
      JSON.stringify({ type: 'subscribe', topics: ['connector:c'], since: { 'connector:c': 1 } }),
    )
    source.read = async () => {
      throw new Error('store down')
    }
    await settle()
    const error = socket.sent.find((m) => m.type === 'error') as {
      topic: string
      error: Record<string, unknown>
    }
    expect(error.topic).toBe('connector:c')
    expect(error.error).toMatchObject({ code: 'unavailable', detail: { last_seq: 1 } })
    expect(failures).toEqual(['stream delivery failed'])
    expect(released).toBe(1)
    let countedTopics = new Map<string, number>()
    conn.countTopics(countedTopics)
    expect(countedTopics.size).toBe(0)
    // Subscribing again (with since) starts over from the point it names.
    source.read = FakeSource.prototype.read.bind(source)
    conn.handleText(
      JSON.stringify({ type: 'subscribe', topics: ['connector:c'], since: { 'connector:c': 1 } }),
    )
    await settle()
    expect(socket.data()).toEqual([2])
    countedTopics = new Map()
    conn.countTopics(countedTopics)
    expect(countedTopics.get('connector')).toBe(1)
  })

  it('acknowledges a live subscription only once its starting point is read, so a commit after the ack arrives', async () => {
    const { socket, source, conn, feeds } = setup()
    source.add(2)
    source.holdHead()
    conn.handleText(JSON.stringify({ type: 'subscribe', topics: ['connector:c'] }))
    await settle()
    // The client commits as soon as it reads the ack. Were the ack out before the starting point is read, that
    // commit would land inside the starting point and never be delivered.
    const acked = () => socket.sent.some((m) => m.type === 'subscribed')
    let committed = false
    const commitOnAck = () => {
      if (committed || !acked()) return
      committed = true
      source.add(1)
      feeds.wakeConnector('ws_1', 'c')
    }
    commitOnAck()
    source.releaseHead()
    await settle()
    commitOnAck()
    await settle()
    expect(acked()).toBe(true)
    expect(socket.data()).toEqual([3])
  })

  it('never sends a seq twice or out of order when wakes pile up during replay', async () => {
    const { socket, source, conn, feeds } = setup()
    source.add(450)
    source.hold()
    conn.handleText(
      JSON.stringify({ type: 'subscribe', topics: ['connector:c'], since: { 'connector:c': 10 } }),
    )
    await settle()
    for (let i = 0; i < 5; i++) {
      source.add(3)
      feeds.wakeConnector('ws_1', 'c')
    }
    source.release()
    await settle()
    expect(socket.data()).toEqual(Array.from({ length: 455 }, (_, i) => i + 11))
  })

  it('announces a gap and replays only the newest maxReplay items', async () => {
    const { socket, source, conn } = setup({ ...STREAM_OPTIONS, maxReplay: 5 })
    source.add(12)
    conn.handleText(
      JSON.stringify({ type: 'subscribe', topics: ['connector:c'], since: { 'connector:c': 3 } }),
    )
    await settle()
    const types = socket.sent.map((m) => m.type)
    expect(types.slice(0, 2)).toEqual(['subscribed', 'gap'])
    expect(socket.sent[1]).toEqual({ type: 'gap', topic: 'connector:c', from: 4, to: 7 })
    expect(socket.data()).toEqual([8, 9, 10, 11, 12])
  })

  it('starts after the newest item when no since is given', async () => {
    const { socket, source, conn, feeds } = setup()
    source.add(4)
    conn.handleText(JSON.stringify({ type: 'subscribe', topics: ['connector:c'] }))
    await settle()
    expect(socket.data()).toEqual([])
    source.add(1)
    feeds.wakeConnector('ws_1', 'c')
    await settle()
    expect(socket.data()).toEqual([5])
  })

  it('stops delivering after unsubscribe, even mid-read', async () => {
    const { socket, source, conn, feeds } = setup()
    conn.handleText(JSON.stringify({ type: 'subscribe', topics: ['connector:c'] }))
    await settle()
    source.hold()
    source.add(2)
    feeds.wakeConnector('ws_1', 'c')
    await settle()
    conn.handleText(JSON.stringify({ type: 'unsubscribe', topics: ['connector:c'] }))
    source.release()
    await settle()
    expect(socket.data()).toEqual([])
    expect(socket.sent.at(-1)).toEqual({ type: 'unsubscribed', topic: 'connector:c' })
  })
})

describe('StreamConnection limits', () => {
  it('closes a slow consumer with 4008 and sends nothing more', async () => {
    const { socket, source, conn, feeds } = setup({ ...STREAM_OPTIONS, maxBufferedBytes: 1000 })
    conn.handleText(JSON.stringify({ type: 'subscribe', topics: ['connector:c'] }))
    await settle()
    source.add(3)
    feeds.wakeConnector('ws_1', 'c')
    await settle()
    expect(socket.data()).toEqual([1, 2, 3])
    socket.bufferedAmount = 1001
    source.add(3)
    feeds.wakeConnector('ws_1', 'c')
    await settle()
    expect(socket.closedWith).toEqual([CLOSE_SLOW_CONSUMER, 'slow consumer'])
    expect(socket.data()).toEqual([1, 2, 3])
    expect(conn.isClosed).toBe(true)
    socket.bufferedAmount = 0
    conn.handleText(JSON.stringify({ type: 'ping' }))
    expect(socket.sent.at(-1)?.type).not.toBe('pong')
  })

  it('terminates a peer that did not answer the previous ping', async () => {
    const { socket, conn } = setup()
    conn.heartbeat()
    expect(socket.pings).toBe(1)
    expect(socket.sent.at(-1)?.type).toBe('heartbeat')
    conn.heartbeat() // no pong in between
    expect(socket.terminated).toBe(true)
    expect(conn.isClosed).toBe(true)
  })

  it('keeps a peer that answers pings', async () => {
    const { socket, conn } = setup()
    for (let i = 0; i < 3; i++) {
      conn.heartbeat()
      conn.pong()
    }
    expect(socket.terminated).toBe(false)
    expect(socket.pings).toBe(3)
  })

  it("closes with 4401 after the catalogue's 401 for the refusal once its key ends", () => {
    const socket = new FakeSocket()
    const conn = new StreamConnection(
      socket,
      principal(['*']),
      () => new FakeSource(),
      STREAM_OPTIONS,
      new ManualClock(),
      NO_INGESTION,
    )
    conn.heartbeat()
    conn.pong()
    expect(socket.closedWith).toBeUndefined()
    conn.credentialEnded('revoked')
    expect(socket.sent.at(-1)).toMatchObject({
      type: 'error',
      error: {
        code: 'unauthenticated',
        message: unauthenticated('revoked').message,
        detail: { reason: 'revoked' },
      },
    })
    expect(socket.closedWith).toEqual([4401, 'unauthenticated'])
    // Once closed, a second end (the watch and a late notice) sends nothing more.
    const sent = socket.sent.length
    conn.credentialEnded('expired')
    expect(socket.sent.length).toBe(sent)
  })
})

describe('StreamConnection ingest messages', () => {
  it('answers queued batches in order and refuses more than the pending bound', async () => {
    const socket = new FakeSocket()
    const gate = new Gate()
    gate.hold()
    const calls: string[] = []
    const conn = new StreamConnection(
      socket,
      principal(['ingest:write']),
      () => new FakeSource(),
      STREAM_OPTIONS,
      new ManualClock(),
      async (connectorId, records) => {
        calls.push(`${connectorId}:${records.length}`)
        await gate.pass()
        return { accepted: records.length, rejected: 0, lineage_root: 'r', batch_id: 'b', rejections: [] }
      },
    )
    for (let i = 0; i < MAX_PENDING_INGESTS + 1; i++) {
      conn.handleText(JSON.stringify({ type: 'ingest', ref: `m${i}`, connector_id: 'c', records: [i] }))
    }
    await settle()
    expect(socket.sent).toEqual([
      expect.objectContaining({
        type: 'error',
        ref: `m${MAX_PENDING_INGESTS}`,
        error: expect.objectContaining({ code: 'rate_limited' }),
      }),
    ])
    expect(calls).toEqual(['c:1']) // one at a time
    gate.release()
    await settle()
    const answers = socket.sent.filter((m) => m.type === 'ingested').map((m) => m.ref)
    expect(answers).toEqual(Array.from({ length: MAX_PENDING_INGESTS }, (_, i) => `m${i}`))
    conn.handleText(JSON.stringify({ type: 'ingest', ref: 'after', connector_id: 'c', records: [] }))
    await settle()
    expect(socket.sent.at(-1)).toMatchObject({ type: 'ingested', ref: 'after', connector_id: 'c' })
  })

  it('refuses ingest without the scope, naming the ref', async () => {
    const socket = new FakeSocket()
    const conn = new StreamConnection(
      socket,
      principal(['stream:runs']),
      () => new FakeSource(),
      STREAM_OPTIONS,
      new ManualClock(),
      async () => {
        throw new Error('must not be called')
      },
    )
    conn.handleText(JSON.stringify({ type: 'ingest', ref: 'x', connector_id: 'c', records: [] }))
    expect(socket.sent).toEqual([
      expect.objectContaining({
        type: 'error',
        ref: 'x',
        error: expect.objectContaining({ code: 'policy_denied' }),
      }),
    ])
  })
})
