/**
 * The shared topic feed (src/surface/topic-feeds.ts) on a fake source whose reads see what was committed when they
 * started, like a query: one read per wake-up however many members, and the seam between a member's own reads and
 * the shared pages (a late member, a first member, a member that joins while the reader is mid-read) loses and
 * repeats nothing.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { TopicFollower } from '../../src/graphql/subscriptions.js'
import { StreamConnection, type StreamPrincipal, type StreamSocket } from '../../src/stream/hub.js'
import { type FeedMember, type FeedPage, TopicFeeds } from '../../src/surface/topic-feeds.js'
import {
  caughtUp,
  MAX_REPLAY,
  type StreamItem,
  type TopicPage,
  type TopicSource,
} from '../../src/surface/topic-sources.js'
import { parseTopic, type Topic } from '../../src/surface/topics.js'
import { Gate } from '../support/gate.js'
import { NO_INGESTION, STREAM_OPTIONS, UNBOUNDED_KEY_TOPICS } from '../support/stream-options.js'

const TOPIC = parseTopic('connector:c') as Topic

class FakeSource implements TopicSource {
  items: StreamItem[] = []
  reads = 0
  failNext = false
  private readonly gate = new Gate()
  add(n: number): void {
    for (let i = 0; i < n; i++) {
      const seq = this.items.length + 1
      this.items.push({ seq, message: { type: 'record', topic: 'connector:c', seq } })
    }
  }
  hold(): void {
    this.gate.hold()
  }
  release(): void {
    this.gate.release()
  }
  async head() {
    return this.items.length
  }
  async resume(since: number) {
    return { after: since }
  }
  async read(after: number, limit: number): Promise<TopicPage> {
    this.reads++
    if (this.failNext) {
      this.failNext = false
      throw new Error('store down')
    }
    // The snapshot is taken when the read starts, like a query that ran before a concurrent commit.
    const all = this.items.filter((i) => i.seq > after)
    const items = all.slice(0, limit)
    await this.gate.pass()
    return { items, scannedTo: items.at(-1)?.seq ?? after, more: all.length > limit }
  }
}

/** A member that reads for itself the way the stream and GraphQL do, then joins. */
class Member implements FeedMember {
  seqs: number[] = []
  failed: unknown
  constructor(public after: number) {}
  take(page: FeedPage): void {
    for (const item of page.items) {
      if (item.seq <= this.after) continue
      this.seqs.push(item.seq)
      this.after = item.seq
    }
    this.after = Math.max(this.after, page.to)
  }
  fail(err: unknown): void {
    this.failed = err
  }
  /** One read of its own; its items are delivered before anything else happens. */
  async ownRead(source: TopicSource): Promise<TopicPage> {
    const from = this.after
    const page = await source.read(from, 200)
    for (const item of page.items) {
      this.seqs.push(item.seq)
      this.after = item.seq
    }
    this.after = Math.max(this.after, page.scannedTo)
    return page
  }
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r))
}

function shared(source: FakeSource) {
  const feeds = new TopicFeeds()
  return { feeds, topic: feeds.acquire('ws_1', TOPIC, () => source) }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe('shared topic feed', () => {
  it('serves 50 stream connections with one read per wake-up, each getting every record once', async () => {
    const source = new FakeSource()
    const feeds = new TopicFeeds()
    const sockets: { sent: Record<string, unknown>[] }[] = []
    for (let i = 0; i < 50; i++) {
      const sent: Record<string, unknown>[] = []
      const socket: StreamSocket = {
        bufferedAmount: 0,
        send: (data) => sent.push(JSON.parse(data)),
        ping() {},
        close() {},
        terminate() {},
      }
      const principal: StreamPrincipal = {
        workspaceId: 'ws_1',
        keyId: `key_${i}`,
        scopes: ['*'],
        maxSubscriptions: 100,
        keyTopics: UNBOUNDED_KEY_TOPICS,
      }
      const conn = new StreamConnection(
        socket,
        principal,
        () => source,
        STREAM_OPTIONS,
        new ManualClock(),
        NO_INGESTION,
        feeds,
      )
      conn.handleText(JSON.stringify({ type: 'subscribe', topics: ['connector:c'] }))
      sockets.push({ sent })
    }
    await settle()
    expect(feeds.snapshot()).toEqual({ topics: 1, members: 50 })
    for (const round of [1, 2, 3]) {
      const before = source.reads
      source.add(1)
      feeds.wakeConnector('ws_1', 'c')
      await settle()
      expect(source.reads - before).toBe(1)
      for (const { sent } of sockets) {
        expect(sent.filter((m) => m.type === 'record').map((m) => m.seq)).toEqual(range(1, round))
      }
    }
    // Another workspace's connector of the same id is another topic: nothing is read for it.
    const before = source.reads
    feeds.wakeConnector('ws_2', 'c')
    await settle()
    expect(source.reads).toBe(before)
  })

  it('lets a late member join behind the shared reader, which reads the difference again for it alone', async () => {
    const source = new FakeSource()
    const { topic } = shared(source)
    source.add(3)
    const live = new Member(3)
    topic.join(live, topic.wakeCount)

    const late = new Member(0) // resumes from an old position
    const wakes = topic.wakeCount
    const reading = late.ownRead(source) // sees 1..3: the read runs before the next commit
    source.add(2)
    topic.wake() // the shared reader hands 4, 5 to the live member
    const page = await reading
    await settle()
    expect(live.seqs).toEqual([4, 5])
    expect(caughtUp(page, 0)).toBe(true)
    expect(late.after).toBe(3)
    // It lacks 4 and 5, which the shared feed is past: joining takes the shared reader back to 3.
    const readsBefore = source.reads
    topic.join(late, wakes)
    await settle()
    expect(source.reads - readsBefore).toBe(1)
    expect(late.seqs).toEqual(range(1, 5))
    expect(live.seqs).toEqual([4, 5]) // the live member skips what it has

    source.add(1)
    topic.wake()
    await settle()
    expect(late.seqs).toEqual(range(1, 6))
    expect(live.seqs).toEqual([4, 5, 6])
  })

  it('does not let a member whose since is beyond the head hold back one that joins lower', async () => {
    const source = new FakeSource()
    const { topic } = shared(source)
    source.add(5)
    const ahead = new Member(1000)
    topic.join(ahead, topic.wakeCount)
    const level = new Member(5)
    topic.join(level, topic.wakeCount)
    await settle()
    source.add(2)
    topic.wake()
    await settle()
    expect(level.seqs).toEqual([6, 7])
    expect(ahead.seqs).toEqual([])
    expect(source.reads).toBeLessThanOrEqual(2)
  })

  it('lets a first member whose read missed a wake-up start a shared read at once', async () => {
    const source = new FakeSource()
    const { topic } = shared(source)
    const member = new Member(0)
    const wakes = topic.wakeCount
    const reading = member.ownRead(source) // sees nothing
    source.add(1)
    topic.wake() // nobody has joined: no shared read yet
    await reading
    expect(member.seqs).toEqual([])
    topic.join(member, wakes)
    await settle()
    expect(member.seqs).toEqual([1])
  })

  it('drops a page read from a position that changed while reading (every member left, another joined)', async () => {
    const source = new FakeSource()
    const { topic } = shared(source)
    source.add(5)
    const first = new Member(5)
    topic.join(first, topic.wakeCount)
    source.hold()
    source.add(1)
    topic.wake() // a read after 5 is in flight
    await settle()
    topic.leave(first)
    const second = new Member(2) // has everything up to 2
    topic.join(second, topic.wakeCount)
    source.release()
    await settle()
    expect(second.seqs).toEqual([3, 4, 5, 6])
  })

  it('reads on while a page comes back full, then stops', async () => {
    const source = new FakeSource()
    const { topic } = shared(source)
    const member = new Member(0)
    topic.join(member, topic.wakeCount)
    source.add(450)
    topic.wake()
    await settle()
    expect(member.seqs).toEqual(range(1, 450))
    expect(source.reads).toBe(3) // 200 + 200 + 50: the short page ends it, no empty read after
  })

  it('tells every member when the shared read fails, and starts over for the next member', async () => {
    const source = new FakeSource()
    const { topic } = shared(source)
    const a = new Member(0)
    const b = new Member(0)
    topic.join(a, topic.wakeCount)
    topic.join(b, topic.wakeCount)
    source.failNext = true
    source.add(1)
    topic.wake()
    await settle()
    expect([a.failed, b.failed]).toEqual([expect.any(Error), expect.any(Error)])
    expect(topic.memberCount).toBe(0)
    const c = new Member(0)
    topic.join(c, topic.wakeCount)
    source.add(1)
    topic.wake()
    await settle()
    expect(c.seqs).toEqual([1, 2])
  })
})

describe('GraphQL follower on the shared feed', () => {
  it('leaves the feed when its consumer lets the backlog grow, then reads for itself: every item once, in order', async () => {
    const source = new FakeSource()
    const { feeds, topic } = shared(source)
    const follower = new TopicFollower('connector:c', topic, 0, () => feeds.release(topic), MAX_REPLAY)
    const first = follower.next() // starts, reads for itself (nothing yet), joins, waits
    await settle()
    expect(topic.memberCount).toBe(1)
    source.add(1)
    topic.wake()
    expect((await first).value).toMatchObject({ seq: 1 })
    source.add(1000)
    topic.wake() // pages of 200 pile up while nobody pulls
    await settle()
    expect(topic.memberCount).toBe(0) // off the feed once more than its backlog bound waits
    const seqs: number[] = [1]
    while (seqs.length < 1001) {
      const next = await follower.next()
      seqs.push((next.value as { seq: number }).seq)
    }
    expect(seqs).toEqual(range(1, 1001))
    await settle()
    expect(topic.memberCount).toBe(1) // caught up and joined again
    source.add(1)
    topic.wake()
    expect((await follower.next()).value).toMatchObject({ seq: 1002 })
    await follower.return()
    expect(feeds.snapshot()).toEqual({ topics: 0, members: 0 })
  })
})
