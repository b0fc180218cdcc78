/**
 * Fan-out without a read per subscriber: a change wakes ONE read per topic in this process, whose page is handed to
 * every subscriber of that topic here (stream connections and GraphQL subscriptions alike).
 *
 * A subscriber first reads for itself from its own starting point (`since`, or the head), page after page, until a
 * read reaches what was committed when it ran; then it joins the topic's shared feed. A subscriber that joins behind
 * the shared reader's position (the shared feed handed out items while it was reading) moves the position back to
 * its own, and the shared reader reads the difference again at once. So every member is always at or ahead of the
 * shared position, and takes a page's items after its own last seq only: the seam between its own reads and the
 * shared pages can neither lose nor repeat anything, and each subscriber still sees strictly increasing seqs.
 */
import type { Change, ChangeFeed } from '../domain/changes.js'
import type { StreamServerMessage } from './contract-types.js'
import { caughtUp, type StreamItem, type TopicSource } from './topic-sources.js'
import type { Topic } from './topics.js'

/** An item of a shared page; its JSON text is made once, however many sockets it is written to. */
export class SharedItem implements StreamItem {
  private text: string | undefined

  constructor(
    readonly seq: number,
    readonly message: StreamServerMessage,
  ) {}

  get json(): string {
    this.text ??= JSON.stringify(this.message)
    return this.text
  }
}

/** What one shared read found: every item of the topic with seq in (from, to], oldest first. */
export interface FeedPage {
  from: number
  to: number
  items: readonly SharedItem[]
}

/** A subscriber that joined a topic's shared feed. */
export interface FeedMember {
  /** The last seq this subscriber delivered or scanned past: it has every item up to it. */
  readonly after: number
  /**
   * Called synchronously with each page, for every member in turn; the member delivers the items after its own
   * `after` and moves to `page.to`. It may leave the feed from here (a slow consumer).
   */
  take(page: FeedPage): void
  /** The shared read failed: the member is out of the feed and tells its client. */
  fail(err: unknown): void
}

/** Items per shared read; a read that fills it is followed at once by the next. */
const SHARED_PAGE = 200

/** One topic of one workspace in this process: its source, the shared reader's position and the joined members. */
export class SharedTopic {
  /** Seq the shared reader reads after; undefined while no member has joined. */
  private position: number | undefined
  private readonly members = new Set<FeedMember>()
  private wakes = 0
  private running = false
  // Stryker disable next-line BooleanLiteral: equivalent: pump() clears it before it first reads it
  private dirty = false
  /** Subscribers holding this topic (joined or still reading for themselves); TopicFeeds counts them. */
  holders = 0

  constructor(
    readonly key: string,
    readonly topic: Topic,
    readonly source: TopicSource,
  ) {}

  /**
   * Wake-ups heard so far. A subscriber reads it before each read of its own and hands it to `join`: a first
   * member whose read may have missed a wake-up then starts a shared read at once.
   */
  // Stryker disable next-line BlockStatement: a speed path: without the count, a first member always starts a shared read (one read more of items every member skips)
  get wakeCount(): number {
    return this.wakes
  }

  // Stryker disable next-line BlockStatement: read by snapshot() and the unit tests only
  get memberCount(): number {
    return this.members.size
  }

  /**
   * Joins `member`, which has read for itself up to what was committed when its last read ran. Ahead of the shared
   * position or level with it, it simply joins: every wake-up since its read also woke the shared reader, whose next
   * page starts at or before the member's position (the member skips what it has).
   */
  join(member: FeedMember, wakeCountBeforeRead: number): void {
    this.members.add(member)
    if (this.position !== undefined && member.after >= this.position) return
    // Behind (the shared reader handed out items while the member read, or another member started from a `since`
    // beyond the head): the position moves back to the member's and the difference is read again; the other members
    // skip it. First member: a wake-up heard while it read (nobody read for the topic then) may name a commit its
    // read did not see.
    const behind = this.position !== undefined
    this.position = member.after
    if (behind || this.wakes !== wakeCountBeforeRead) void this.pump()
  }

  leave(member: FeedMember): void {
    if (!this.members.delete(member)) return
    // Nobody to read for: the next first member sets the position again (an old one would make it reread).
    if (this.members.size === 0) this.position = undefined
  }

  wake(): void {
    this.wakes++
    if (this.members.size > 0) void this.pump()
  }

  /** Single flight: a wake-up during a read makes one more read after it, never a second reader. */
  private async pump(): Promise<void> {
    if (this.running) {
      this.dirty = true
      return
    }
    this.running = true
    try {
      do {
        this.dirty = false
        for (;;) {
          const from = this.position
          if (from === undefined) return
          const result = await this.source.read(from, SHARED_PAGE)
          if (this.position !== from) {
            // A member joined behind the position this read started from (or every member left and another joined):
            // read again from the new position.
            this.dirty = true
            break
          }
          const to = result.scannedTo
          const page: FeedPage = {
            from,
            to,
            items: result.items.map((item) => new SharedItem(item.seq, item.message)),
          }
          this.position = to
          for (const member of [...this.members]) {
            if (!this.members.has(member)) continue // left while an earlier member took the page
            try {
              member.take(page)
            } catch (err) {
              this.members.delete(member)
              member.fail(err)
            }
          }
          if (this.members.size === 0) this.position = undefined
          if (caughtUp(result, from)) break
        }
      } while (this.dirty)
    } catch (err) {
      // The store failed: every member is told (each resumes with its own last seq), as its own read would have.
      const failed = [...this.members]
      this.members.clear()
      this.position = undefined
      for (const member of failed) member.fail(err)
    } finally {
      this.running = false
    }
  }
}

/** Topics and their members in one process, shared by the stream and GraphQL subscriptions. */
export interface TopicFeedsSnapshot {
  topics: number
  members: number
}

/**
 * Every shared topic of this process, by workspace and topic name. A topic lives while a subscriber holds it
 * (`acquire` … `release`); wake-ups address topics, never subscribers.
 */
export class TopicFeeds {
  private readonly topics = new Map<string, SharedTopic>()

  /** The shared feed of `topic` in `workspaceId`; its source comes from its first holder. Release it when done. */
  acquire(workspaceId: string, topic: Topic, source: () => TopicSource): SharedTopic {
    const key = topicKey(workspaceId, topic.name)
    let shared = this.topics.get(key)
    if (!shared) {
      shared = new SharedTopic(key, topic, source())
      this.topics.set(key, shared)
    }
    shared.holders++
    return shared
  }

  /** A holder is done (after leaving the feed, if it had joined). */
  // Stryker disable next-line BlockStatement: a topic nobody holds left in the map costs memory only: the next holder finds it with no member and no position, as a new one
  release(shared: SharedTopic): void {
    // Stryker disable next-line UpdateOperator: see above (a count that never reaches 0 leaves the topic in the map)
    shared.holders--
    if (shared.holders <= 0 && this.topics.get(shared.key) === shared) this.topics.delete(shared.key)
  }

  /** Records landed on a connector of a workspace. */
  wakeConnector(workspaceId: string, connectorId: string): void {
    this.topics.get(topicKey(workspaceId, `connector:${connectorId}`))?.wake()
  }

  /** Events were appended: every workspace's `runs` topic looks again. */
  wakeRuns(): void {
    for (const shared of this.topics.values()) if (shared.topic.kind === 'runs') shared.wake()
  }

  /** Wake-ups may have been missed (the feed reconnected, the fallback poll): every topic looks again. */
  wakeAll(): void {
    for (const shared of this.topics.values()) shared.wake()
  }

  /** Topics held and subscribers joined to their shared feeds (tests, diagnostics). */
  // Stryker disable next-line BlockStatement: read by the unit tests only
  snapshot(): TopicFeedsSnapshot {
    let members = 0
    // Stryker disable next-line AssignmentOperator: read by the unit tests only
    for (const shared of this.topics.values()) members += shared.memberCount
    // Stryker disable next-line ObjectLiteral: read by the unit tests only
    return { topics: this.topics.size, members }
  }

  /** Routes the change feed's wake-ups to the topics they concern; returns the unsubscribe function. */
  follow(changes: Pick<ChangeFeed, 'subscribe'>): () => void {
    return changes.subscribe((change: Change) => {
      if (change.kind === 'events') this.wakeRuns()
      else if (change.kind === 'records') this.wakeConnector(change.workspaceId, change.connectorId)
      // Stryker disable next-line all: a resync comes only when PostgreSQL's change feed reconnects, which no run has (the fallback poll wakes every topic too)
      else if (change.kind === 'resync') this.wakeAll()
    })
  }
}

/** Workspace ids and topic names never contain a newline. */
function topicKey(workspaceId: string, topicName: string): string {
  return `${workspaceId}\n${topicName}`
}
