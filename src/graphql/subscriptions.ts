/**
 * Subscriptions are the /v1/stream topics over graphql-ws: the same topic scopes, the same TopicSource ("read after
 * the last seq sent") and the same shared topic feeds as the stream hub (src/surface/topic-feeds.ts: one read per topic
 * per change, for stream and GraphQL subscribers alike), so replay, the replay/live seam and any cross-replica
 * wake-up behave exactly as on /v1/stream.
 */

import { ApiError } from '../domain/errors.js'
import { assertScope } from '../surface/scopes.js'
import type { FeedMember, FeedPage, SharedTopic } from '../surface/topic-feeds.js'
import { caughtUp, connectorSource, runsSource, type TopicSource } from '../surface/topic-sources.js'
import { parseTopic, RUNS_TOPIC, type Topic } from '../surface/topics.js'
import type { GraphqlContext } from './context.js'

const READ_PAGE = 200
type Message = Record<string, unknown>

/**
 * `since`, the schema's `Int`: graphql-js has already refused anything but a 32-bit integer, null or nothing, so
 * what is left to judge is its sign.
 */
function sinceArg(value: unknown): number | undefined {
  if (typeof value !== 'number') return undefined
  if (value < 0) {
    throw new ApiError('invalid_request', 'since must be a non-negative integer seq', {
      issues: [{ location: 'args', path: 'since', message: 'must be a non-negative integer' }],
      fields: ['since'],
    })
  }
  return value
}

export function runEvents(_p: unknown, args: Record<string, unknown>, ctx: GraphqlContext) {
  assertScope(ctx.auth, RUNS_TOPIC.scope)
  const since = sinceArg(args.since)
  const workspaceId = ctx.auth.workspaceId
  return follow(ctx, RUNS_TOPIC, since, () => runsSource(ctx.ports.events, workspaceId))
}

export function connectorRecords(_p: unknown, args: Record<string, unknown>, ctx: GraphqlContext) {
  const name = `connector:${String(args.connector_id)}`
  const topic = parseTopic(name)
  if (topic?.kind !== 'connector') {
    throw new ApiError('invalid_request', 'connector_id is not a valid connector id', {
      issues: [{ location: 'args', path: 'connector_id', message: 'must match ^[A-Za-z0-9_.:-]{1,128}$' }],
      fields: ['connector_id'],
    })
  }
  assertScope(ctx.auth, topic.scope)
  const since = sinceArg(args.since)
  const workspaceId = ctx.auth.workspaceId
  return follow(ctx, topic, since, () =>
    connectorSource(ctx.ports.ingestion, workspaceId, topic.connectorId, name),
  )
}

/** Follows the caller's `topic` after `since`, replaying at most the context's window, as /v1/stream does. */
function follow(
  ctx: GraphqlContext,
  topic: Topic,
  since: number | undefined,
  source: () => TopicSource,
): TopicFollower {
  const feeds = ctx.ports.topicFeeds
  const feed = feeds.acquire(ctx.auth.workspaceId, topic, source)
  return new TopicFollower(topic.name, feed, since, () => feeds.release(feed), ctx.replayWindow)
}

/** Messages a joined follower may hold for a consumer that does not pull; beyond it, it reads for itself again. */
// Stryker disable next-line ArithmeticOperator: a memory bound: a follower past it reads the same messages for itself again, so what reaches the client is the same.
const MAX_BACKLOG = 2 * READ_PAGE

/**
 * An async iterator over one topic: a `gap` first when `since` is too far back, then every message after the last
 * seq delivered. It reads for itself (pulled by the consumer) until it has caught up, then joins the topic's shared
 * feed, whose pages it queues; a consumer that lets more than MAX_BACKLOG messages pile up is taken off the feed
 * and reads for itself again as it pulls, so memory stays bounded as with pull alone. `return()` (the client
 * completed) ends a pending wait at once.
 */
export class TopicFollower implements AsyncIterableIterator<Message>, FeedMember {
  /** The last seq queued or scanned past. */
  private lastSeq = 0
  private started = false
  private done = false
  private joined = false
  private failure: { err: unknown } | undefined
  private waiting: (() => void) | undefined
  private readonly queue: Message[] = []

  constructor(
    private readonly topic: string,
    private readonly feed: SharedTopic,
    private readonly since: number | undefined,
    private readonly release: () => void,
    /** Most messages a `since` replays; older ones are announced as one `gap`. */
    private readonly maxReplay: number,
  ) {}

  get after(): number {
    return this.lastSeq
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Message> {
    return this
  }

  async next(): Promise<IteratorResult<Message>> {
    try {
      while (!this.done) {
        const queued = this.queue.shift()
        if (queued) return { value: queued, done: false }
        if (this.failure) throw this.failure.err
        if (!this.started) await this.start()
        else if (!this.joined) await this.catchUp()
        else await this.waitForPage()
      }
    } catch (err) {
      await this.return()
      throw err
    }
    return { value: undefined, done: true }
  }

  async return(): Promise<IteratorResult<Message>> {
    if (!this.done) {
      this.done = true
      this.leave()
      this.release()
      this.waiting?.()
    }
    return { value: undefined, done: true }
  }

  take(page: FeedPage): void {
    for (const item of page.items) {
      if (item.seq <= this.lastSeq) continue
      this.queue.push(item.message)
      this.lastSeq = item.seq
    }
    this.lastSeq = Math.max(this.lastSeq, page.to)
    // Everything up to `after` is queued: reading for itself from there later loses nothing.
    if (this.queue.length > MAX_BACKLOG) this.leave()
    this.waiting?.()
  }

  fail(err: unknown): void {
    this.joined = false
    this.failure = { err }
    this.waiting?.()
  }

  private leave(): void {
    if (!this.joined) return
    this.joined = false
    this.feed.leave(this)
  }

  private async start(): Promise<void> {
    this.started = true
    if (this.since === undefined) {
      this.lastSeq = await this.feed.source.head()
      return
    }
    const resume = await this.feed.source.resume(this.since, this.maxReplay)
    this.lastSeq = resume.after
    if (resume.gap) this.queue.push({ type: 'gap', topic: this.topic, ...resume.gap })
  }

  /** One read of its own after the last seq queued; once it has caught up, joins the shared feed. */
  private async catchUp(): Promise<void> {
    const wakes = this.feed.wakeCount
    const from = this.lastSeq
    const page = await this.feed.source.read(from, READ_PAGE)
    if (this.done) return
    for (const item of page.items) {
      this.queue.push(item.message)
      this.lastSeq = item.seq
    }
    this.lastSeq = Math.max(this.lastSeq, page.scannedTo)
    if (caughtUp(page, from)) {
      this.feed.join(this, wakes)
      this.joined = true
    }
  }

  private async waitForPage(): Promise<void> {
    if (this.queue.length > 0 || this.failure || this.done || !this.joined) return
    await new Promise<void>((resolve) => {
      this.waiting = resolve
    })
    this.waiting = undefined
  }
}
