import type { Clock } from '../domain/clock.js'
import { toRfc3339 } from '../domain/clock.js'
import { ApiError, errorEnvelope, unauthenticated } from '../domain/errors.js'
import type { FailureLog } from '../domain/failure-log.js'
import type { KeyRefusal } from '../domain/identity.js'
import { newId } from '../domain/ids.js'
import type { IngestResult } from '../domain/ingestion/service.js'
import { quotaExceeded } from '../domain/quotas/quota.js'
import { scopeAllows } from '../domain/scopes.js'
import type { StreamServerMessage } from '../surface/contract-types.js'
import { internalError, unavailable } from '../surface/errors.js'
import { missingScope } from '../surface/scopes.js'
import { CLOSE_SLOW_CONSUMER, countSlowConsumer, SLOW_CONSUMER_REASON } from '../surface/slow-consumer.js'
import type { SocketTelemetry } from '../surface/socket-telemetry.js'
import { type FeedMember, type FeedPage, type SharedTopic, TopicFeeds } from '../surface/topic-feeds.js'
import { caughtUp, type TopicSource } from '../surface/topic-sources.js'
import { parseTopic, type Topic } from '../surface/topics.js'
import { parseClientMessage } from './protocol.js'

/** What the hub needs of a WebSocket (the `ws` package's WebSocket fits; tests pass fakes). */
export interface StreamSocket {
  readonly bufferedAmount: number
  send(data: string): void
  ping(): void
  close(code: number, reason: string): void
  terminate(): void
}

export interface StreamOptions {
  /** Ping frame + `heartbeat` message period; a peer that missed the previous ping's pong is dropped. */
  heartbeatMs: number
  /** Close with 4008 once this many bytes wait in the socket's send buffer. */
  maxBufferedBytes: number
  /** Most messages replayed per topic on a `since` resume; older ones are announced with a `gap`. */
  maxReplay: number
  /**
   * Every topic reads again this often even without a wake-up, so a lost cross-replica notification delays
   * delivery by at most this much (0 = never).
   */
  fallbackPollMs: number
  /** Messages sent and slow consumers closed, for the server's metrics. */
  telemetry?: Pick<SocketTelemetry, 'messageSent' | 'slowConsumerClosed'>
  /** Where failures no client waits for are logged. */
  log: FailureLog
}

/** Open connections and their live subscriptions by topic kind (read when metrics are scraped). */
export interface HubSnapshot {
  open: number
  subscriptions: Map<string, number>
}

export const CLOSE_UNAUTHENTICATED = 4401

/** The refusal of one more topic on a connection that holds its quota: unsubscribe from one, or open a socket. */
function subscriptionQuota(limit: number, used: number): ApiError {
  return quotaExceeded('stream_subscriptions_per_socket', limit, used)
}

/**
 * The caller behind a connection. A key revoked or expired while it is open ends it through the key watch
 * (src/domain/keys/watch.ts, which calls `credentialEnded`), the one place that follows a key's end.
 */
export interface StreamPrincipal {
  workspaceId: string
  keyId: string
  scopes: readonly string[]
  /**
   * Topics this connection may hold at once: the workspace's `stream_subscriptions_per_socket` quota under the
   * server's ceiling (AGENTOPS_STREAM_MAX_SUBSCRIPTIONS). A subscribe past it is refused per topic with
   * `quota_exceeded`: every topic is read on each wake-up and fallback poll, so without it one socket took 10,000
   * topics and kept a core busy at rest.
   */
  maxSubscriptions: number
  /** The key's topics across all its connections (`stream_subscriptions_per_key`), counted in the store. */
  keyTopics: KeyTopics
}

/** Room for topics under a quota shared by every connection of a key (src/domain/quotas/stream-sockets.ts). */
export interface KeyTopics {
  /** Takes room for up to `wanted` more topics: how many were granted, and the refusal of the rest. */
  take(wanted: number): Promise<{ granted: number; refusal?: ApiError }>
  /** Gives back room for topics this connection no longer holds; resolves once counted (never rejects). */
  release(count: number): Promise<void>
}

export type SourceFactory = (topic: Topic, workspaceId: string) => TopicSource

/** Stores a batch sent over the socket for this connection's caller; throws ApiError like the REST route. */
export type StreamIngestor = (connectorId: string, records: unknown[]) => Promise<IngestResult>

/**
 * One topic of one connection. It reads for itself from its starting point until it has caught up, then joins the
 * topic's shared feed (src/surface/topic-feeds.ts) and is handed the pages read for every subscriber of the topic.
 */
interface Subscription {
  topic: Topic
  feed: SharedTopic
  member: FeedMember
  since: number | undefined
  after: number
  cancelled: boolean
}

const READ_PAGE = 200
/** Socket batches that may wait for their answer on one connection. */
export const MAX_PENDING_INGESTS = 16

/**
 * One client: its subscriptions, each caught up by its own reads after the last seq sent, then fed by its topic's
 * shared reader.
 */
export class StreamConnection {
  private readonly subs = new Map<string, Subscription>()
  private closed = false
  private alive = true
  /** Batches sent over the socket are stored one after the other, so their answers come back in order. */
  private ingestQueue: Promise<void> = Promise.resolve()
  private pendingIngests = 0
  /** The subscribe or unsubscribe waiting for the store, after which the next ones run. */
  private pendingControl: Promise<void> | undefined

  constructor(
    private readonly socket: StreamSocket,
    readonly principal: StreamPrincipal,
    private readonly sources: SourceFactory,
    private readonly options: StreamOptions,
    private readonly clock: Clock,
    private readonly ingestor: StreamIngestor,
    /** The process's shared topic readers; a connection built alone (tests) gets its own. */
    private readonly feeds: TopicFeeds = new TopicFeeds(),
  ) {}

  // Stryker disable next-line BlockStatement: what the server's gauges read (snapshot() feeds telemetry.readFrom), no answer of the API
  get isClosed(): boolean {
    return this.closed
  }

  /** Adds this connection's live subscriptions to `counts`, by topic kind (never by topic name: ids are tenant data). */
  // Stryker disable next-line BlockStatement: what the server's gauges read (snapshot() feeds telemetry.readFrom), no answer of the API
  countTopics(counts: Map<string, number>): void {
    // Stryker disable next-line ArithmeticOperator,LogicalOperator: what the server's gauges read (snapshot() feeds telemetry.readFrom), no answer of the API
    for (const sub of this.subs.values()) counts.set(sub.topic.kind, (counts.get(sub.topic.kind) ?? 0) + 1)
  }

  handleText(text: string): void {
    // Stryker disable next-line ConditionalExpression: equivalent: `ws` delivers no message once the socket closed, and send() sends nothing on a closed connection
    if (this.closed) return
    this.alive = true
    const parsed = parseClientMessage(text)
    if (!parsed.ok) {
      // An undefined ref is written as none (JSON.stringify drops it).
      this.sendError(undefined, new ApiError('invalid_request', parsed.message), { ref: parsed.ref })
      return
    }
    const msg = parsed.message
    if (msg.type === 'ping') this.send({ type: 'pong', ts: toRfc3339(this.clock.now()) })
    else if (msg.type === 'ingest') this.ingest(msg.connectorId, msg.records, msg.ref)
    else if (msg.type === 'unsubscribe') this.control(() => this.unsubscribe(msg.topics))
    else this.control(() => this.subscribe(msg.topics, msg.since))
  }

  /**
   * Runs a subscribe or an unsubscribe in the order the client sent them: at once while none waits for the store
   * (a key's topics are counted there, KeyTopics), else after the ones that wait.
   */
  private control(step: () => Promise<void> | undefined): void {
    const waiting = this.pendingControl
    const result = waiting ? waiting.then(step) : step()
    if (!result) return
    // Stryker disable all: equivalent: a settled promise left in pendingControl only chains the next step after nothing (a speed path, no other order); the catch only logs
    const done: Promise<void> = result
      .catch((err: unknown) => this.options.log.error({ err }, 'stream subscribe failed'))
      .finally(() => {
        if (this.pendingControl === done) this.pendingControl = undefined
      })
    // Stryker restore all
    this.pendingControl = done
  }

  /**
   * Drops the topics; when the key's topics are counted, the acks go out once the store gave them back, so a
   * client that read `unsubscribed` finds the room on any connection of its key.
   */
  private unsubscribe(names: readonly string[]): Promise<void> {
    let dropped = 0
    for (const name of names) {
      const sub = this.subs.get(name)
      if (sub && this.drop(sub)) dropped++
    }
    // Giving back no room (none of the topics was held) costs the store nothing (KeyTopics.release).
    return this.principal.keyTopics.release(dropped).then(() => {
      for (const name of names) this.send({ type: 'unsubscribed', topic: name })
    })
  }

  /**
   * Topics this connection may not hold are refused each with its reason; the new ones within the connection's
   * quota are then counted against the key's (across its connections and replicas) when the key has one, and
   * those past it refused with that quota.
   */
  private subscribe(names: readonly string[], since: Record<string, number>): Promise<void> | undefined {
    const fresh = new Map<string, Topic>()
    for (const name of names) {
      const topic = parseTopic(name)
      if (!topic) {
        const unknown = 'Unknown topic: use "connector:<connector_id>" or "runs"'
        this.sendError(name, new ApiError('invalid_request', unknown, { topic: name }))
        continue
      }
      if (!scopeAllows(this.principal.scopes, topic.scope)) {
        this.sendError(name, missingScope(this.principal.scopes, topic.scope))
        continue
      }
      if (this.subs.has(name)) {
        this.send({ type: 'subscribed', topic: name })
        continue
      }
      // Stryker disable next-line ConditionalExpression: equivalent: parseTopics() already dropped repeated names, so no name comes twice
      if (fresh.has(name)) continue
      const limit = this.principal.maxSubscriptions
      const held = this.subs.size + fresh.size
      if (held >= limit) {
        this.sendError(name, subscriptionQuota(limit, held))
        continue
      }
      fresh.set(name, topic)
    }
    // Stryker disable next-line ConditionalExpression: equivalent: with nothing fresh, taking room for 0 topics grants 0 and starts nothing (a speed path)
    if (fresh.size === 0) return undefined
    const topics = [...fresh]
    return this.principal.keyTopics.take(fresh.size).then(
      ({ granted, refusal }) => {
        // Stryker disable next-line ConditionalExpression: a socket that closed while its topics were counted sends nothing either way (send() checks closed)
        if (this.closed) return
        this.start(new Map(topics.slice(0, granted)), since)
        for (const [name] of topics.slice(granted)) this.sendError(name, refusal ?? unavailable())
      },
      // Stryker disable next-line BlockStatement: reached only when the store fails to count the key's topics, which no run has
      (err: unknown) => {
        // The store did not answer: nothing was counted, so each topic is refused and may be asked for again.
        this.options.log.error({ err }, 'stream subscription count failed')
        for (const [name] of topics) this.sendError(name, unavailable())
      },
    )
  }

  /** Opens each topic; its ack is sent by its catch-up once the starting point is read (see catchUp). */
  private start(topics: Map<string, Topic>, since: Record<string, number>): void {
    const started: Subscription[] = []
    for (const [name, topic] of topics) {
      const sub = this.open(topic, since[name])
      this.subs.set(name, sub)
      started.push(sub)
    }
    for (const sub of started) void this.catchUp(sub)
  }

  private ingest(connectorId: string, records: unknown[], ref: string | undefined): void {
    // An undefined ref is written as none (JSON.stringify drops it).
    const extra = { ref }
    if (!scopeAllows(this.principal.scopes, 'ingest:write')) {
      this.sendError(undefined, missingScope(this.principal.scopes, 'ingest:write'), extra)
      return
    }
    // Stryker disable next-line EqualityOperator: the bound's exact value is the reference's own guard of its memory (no document names it): a client cannot tell 16 waiting batches from 17 without knowing how fast the store answers
    if (this.pendingIngests >= MAX_PENDING_INGESTS) {
      // Each queued batch holds its records in memory; a client must wait for answers rather than pile them up.
      const message = `At most ${MAX_PENDING_INGESTS} batches may wait for an answer on one connection`
      this.sendError(undefined, new ApiError('rate_limited', message, { limit: MAX_PENDING_INGESTS }), extra)
      return
    }
    this.pendingIngests++
    this.ingestQueue = this.ingestQueue.then(async () => {
      // Stryker disable next-line ConditionalExpression: a batch whose socket closed before its turn: storing it or not are both legal, no answer can reach its client (§4 shows no stream message)
      if (this.closed) return
      try {
        const result = await this.ingestor(connectorId, records)
        this.send({ type: 'ingested', ...extra, connector_id: connectorId, ...result })
      } catch (err) {
        // Every error the ingestor throws against a working store is an ApiError
        // (stream.socket-ingest-judged-like-rest).
        this.sendError(undefined, err instanceof ApiError ? err : this.unexpected(err), extra)
      } finally {
        this.pendingIngests--
      }
    })
  }

  /** A failure the ingestor did not mean (a store failure): logged, and answered without its internals. */
  // Stryker disable all: reached only by a store failure no run has (see ingest)
  private unexpected(err: unknown): ApiError {
    this.options.log.error({ err }, 'stream ingest failed')
    return internalError()
  }
  // Stryker restore all

  private open(topic: Topic, since: number | undefined): Subscription {
    const workspaceId = this.principal.workspaceId
    const feed = this.feeds.acquire(workspaceId, topic, () => this.sources(topic, workspaceId))
    const sub: Subscription = {
      topic,
      feed,
      since,
      after: 0,
      cancelled: false,
      member: {
        get after() {
          return sub.after
        },
        take: (page) => this.take(sub, page),
        // Stryker disable next-line ArrowFunction: reached only when the store fails a topic's read, which no run has
        fail: (err) => this.failed(sub, err),
      },
    }
    return sub
  }

  /**
   * Ends a subscription: no more data for it, from its own reads or the shared feed. Answers whether it was live
   * (its caller then gives its room back to the key's count; a closing connection gives all of it back at once,
   * with its socket's row).
   */
  private drop(sub: Subscription): boolean {
    // Stryker disable next-line ConditionalExpression,BooleanLiteral: only failed() drops a topic that may have gone already, after a store failure no run has
    if (sub.cancelled) return false
    sub.cancelled = true
    this.subs.delete(sub.topic.name)
    sub.feed.leave(sub.member)
    this.feeds.release(sub.feed)
    return true
  }

  pong(): void {
    this.alive = true
  }

  /** Called every heartbeat period by the hub. */
  heartbeat(): void {
    // Stryker disable next-line ConditionalExpression: equivalent: a closed connection has left the hub, and send() sends nothing on it
    if (this.closed) return
    if (!this.alive) {
      // No pong since the last ping: the peer is gone; free the socket without a closing handshake.
      this.markClosed()
      this.socket.terminate()
      return
    }
    this.alive = false
    try {
      this.socket.ping()
    } catch {
      // a socket that is already closing cannot ping; the close event cleans up
    }
    this.send({ type: 'heartbeat', ts: toRfc3339(this.clock.now()) })
  }

  /**
   * The connection's key was revoked or expired: says why and closes with 4401 now. Synchronous, so nothing the
   * hub wakes for later (the feed hears a revoke before the records committed after it) reaches this socket.
   */
  credentialEnded(reason: KeyRefusal): void {
    // Closed already, nothing is sent (send() and closeWith() look).
    // The catalogue's 401 for that refusal: the message and detail REST answers the token with from now on.
    this.sendError(undefined, unauthenticated(reason))
    this.closeWith(CLOSE_UNAUTHENTICATED, 'unauthenticated')
  }

  closeWith(code: number, reason: string): void {
    // Stryker disable next-line ConditionalExpression: equivalent: a closed connection holds no topic to drop, and ws ignores close() on a socket already closing
    if (this.closed) return
    this.markClosed()
    // ws throws here only for a code or reason it cannot send (the hub's are all valid); a socket still in its
    // handshake is never the hub's.
    this.socket.close(code, reason)
  }

  /** The socket is gone (closed by either side): every subscription ends. */
  // Stryker disable all: the cleanup of a socket already closed: no message reaches it either way (ws sends nothing after close)
  markClosed(): void {
    this.closed = true
    for (const sub of [...this.subs.values()]) this.drop(sub)
  }
  // Stryker restore all

  /**
   * Fixes the starting point, acknowledges, then reads for this subscription alone (replay, and whatever commits
   * meanwhile) until a read reaches what was committed when it ran; then joins the topic's shared feed (which reads
   * again whatever it handed out meanwhile, see SharedTopic.join).
   */
  private async catchUp(sub: Subscription): Promise<void> {
    const source = sub.feed.source
    try {
      // The starting point is fixed before the ack: "no since" means everything committed after the client reads
      // `subscribed`. Acking first would let a commit that lands before `head()` answers (a round trip on
      // PostgreSQL) fall behind the starting point and never be delivered.
      if (sub.since === undefined) {
        sub.after = await source.head()
        if (sub.cancelled || this.closed) return
        if (!this.send({ type: 'subscribed', topic: sub.topic.name })) return
      } else {
        const resume = await source.resume(sub.since, this.options.maxReplay)
        if (sub.cancelled || this.closed) return
        if (!this.send({ type: 'subscribed', topic: sub.topic.name })) return
        if (resume.gap && !this.send({ type: 'gap', topic: sub.topic.name, ...resume.gap })) return
        sub.after = resume.after
      }
      for (;;) {
        const wakes = sub.feed.wakeCount
        const page = await source.read(sub.after, READ_PAGE)
        if (sub.cancelled || this.closed) return
        const from = sub.after
        for (const item of page.items) {
          if (!this.send(item.message)) return
          sub.after = item.seq
        }
        sub.after = page.scannedTo
        if (caughtUp(page, from)) {
          sub.feed.join(sub.member, wakes)
          return
        }
      }
    } catch (err) {
      this.failed(sub, err)
    }
  }

  /** A page of the topic's shared reader: the items after this subscription's last seq. */
  private take(sub: Subscription, page: FeedPage): void {
    if (sub.cancelled || this.closed) return
    for (const item of page.items) {
      if (item.seq <= sub.after) continue
      if (!this.sendText(item.json)) return
      sub.after = item.seq
    }
    sub.after = Math.max(sub.after, page.to)
  }

  /** A read for this subscription failed: the client is told where to resume, and the topic is dropped. */
  // Stryker disable all: reached only when the store fails a topic's read, which no run has (test/stream/hub.test.ts holds it)
  private failed(sub: Subscription, err: unknown): void {
    if (!this.drop(sub)) return
    // The topic's kind only: its name carries tenant ids.
    this.options.log.error({ err, topic: sub.topic.kind }, 'stream delivery failed')
    const paused = 'Delivery paused by a store error; resubscribe with since'
    this.sendError(sub.topic.name, new ApiError('unavailable', paused, { last_seq: sub.after }))
    if (!this.closed) void this.principal.keyTopics.release(1)
  }
  // Stryker restore all

  private send(message: StreamServerMessage): boolean {
    return this.sendText(JSON.stringify(message))
  }

  /** Sends unless the peer is too slow: then the connection is closed (4008) instead of buffering without bound. */
  private sendText(text: string): boolean {
    if (this.closed) return false
    if (countSlowConsumer(this.socket, this.options.maxBufferedBytes, this.options.telemetry)) {
      this.closeWith(CLOSE_SLOW_CONSUMER, SLOW_CONSUMER_REASON)
      return false
    }
    this.socket.send(text)
    this.options.telemetry?.messageSent()
    return true
  }

  /** An `error` message: the spec §7 envelope, with the topic or `ref` it answers. */
  private sendError(topic: string | undefined, err: ApiError, extra: Record<string, unknown> = {}): void {
    // A topic or ref left undefined is written as none (JSON.stringify drops it).
    this.send({
      type: 'error',
      topic,
      ...extra,
      // Stryker disable next-line StringLiteral: an id's prefix is the reference's choice (§7 types request_id a string, nothing more)
      ...errorEnvelope(err, newId('req', this.clock.now())),
    })
  }
}

export interface HubDeps {
  clock: Clock
  sources: SourceFactory
  /**
   * The process's shared topic readers, woken by the change feed (TopicFeeds.follow) once per change: the hub
   * never wakes subscribers one by one.
   */
  feeds: TopicFeeds
}

/** Every open connection of one server, the wake-ups that feed them and the heartbeat timer. */
export class StreamHub {
  private readonly connections = new Set<StreamConnection>()
  private timer: NodeJS.Timeout | undefined
  private pollTimer: NodeJS.Timeout | undefined

  constructor(
    private readonly deps: HubDeps,
    readonly options: StreamOptions,
  ) {}

  start(): void {
    // The fallback poll only makes up for a wake-up lost between replicas (a notification dropped with its
    // connection): the wake-ups of one server's own commits are never lost.
    // Stryker disable next-line all: see above
    if (this.options.fallbackPollMs > 0) {
      // Stryker disable next-line all: see above
      this.pollTimer = setInterval(() => this.deps.feeds.wakeAll(), this.options.fallbackPollMs)
      this.pollTimer.unref()
    }
    if (this.options.heartbeatMs > 0) {
      this.timer = setInterval(() => this.beat(), this.options.heartbeatMs)
      this.timer.unref()
    }
  }

  add(socket: StreamSocket, principal: StreamPrincipal, ingestor: StreamIngestor): StreamConnection {
    const connection = new StreamConnection(
      socket,
      principal,
      this.deps.sources,
      this.options,
      this.deps.clock,
      ingestor,
      this.deps.feeds,
    )
    this.connections.add(connection)
    return connection
  }

  // Stryker disable next-line BlockStatement: the cleanup of a socket already closed (memory only): no message reaches it either way
  remove(connection: StreamConnection): void {
    connection.markClosed()
    this.connections.delete(connection)
  }

  // Stryker disable all: what the server's gauges read (snapshot() feeds telemetry.readFrom), no answer of the API;
  // and stop(), which only the server's shutdown calls (no request is answered then)
  /** Open connections (one the server is closing no longer counts) and subscriptions by topic kind: the gauges. */
  snapshot(): HubSnapshot {
    const subscriptions = new Map<string, number>([
      ['runs', 0],
      ['connector', 0],
    ])
    let open = 0
    for (const c of this.connections) {
      if (c.isClosed) continue
      open++
      c.countTopics(subscriptions)
    }
    return { open, subscriptions }
  }

  /** Closes every connection (1001) and stops the timers: the server is shutting down. */
  stop(): void {
    if (this.timer) clearInterval(this.timer)
    if (this.pollTimer) clearInterval(this.pollTimer)
    for (const c of this.connections) c.closeWith(1001, 'server shutting down')
    this.connections.clear()
  }

  // Stryker restore all
  beat(): void {
    // After the poll phase: a pong already waiting in a socket's buffer (the loop was busy when the period ended)
    // is read first, so a slow event loop never drops a healthy peer.
    setImmediate(() => {
      for (const c of this.connections) c.heartbeat()
    })
  }
}
