import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocketServer } from 'ws'
import type { Clock } from '../domain/clock.js'
import { ApiError, unauthenticated } from '../domain/errors.js'
import type { FailureLog } from '../domain/failure-log.js'
import type { KeyRefusal } from '../domain/identity.js'
import type { IngestionService } from '../domain/ingestion/service.js'
import type { KeyService, VerifiedKey } from '../domain/keys/service.js'
import { rateLimited } from '../domain/limits/rate-limit.js'
import type { LimitsService } from '../domain/limits/service.js'
import { quotaLimit } from '../domain/quotas/quota.js'
import type { SocketLease, StreamSocketQuotas } from '../domain/quotas/stream-sockets.js'
import { callerFromKey } from '../surface/caller.js'
import { unavailable } from '../surface/errors.js'
import { CLOSE_SLOT_LAPSED, SLOT_LAPSED_REASON } from '../surface/key-slot.js'
import { NO_OBSERVER, type SurfaceObserver } from '../surface/observe.js'
import { refuseOnSocket } from '../surface/socket-refusal.js'
import type { SocketTelemetry } from '../surface/socket-telemetry.js'
import type { TopicFeeds } from '../surface/topic-feeds.js'
import {
  connectorSource,
  type RecordReader,
  type RunEventReader,
  runsSource,
} from '../surface/topic-sources.js'
import { refuseBadHandshakes, type UpgradeHandler } from '../surface/upgrade.js'
import { type StreamConnection, StreamHub, type StreamIngestor } from './hub.js'

/** Room for the JSON around an `ingest` message's records, on top of the REST body limit. */
const MESSAGE_ENVELOPE_BYTES = 64 * 1024

const hubs = new WeakMap<Server, StreamHub>()

/** The hub serving a server's stream (tests and diagnostics read its connection count). */
// Stryker disable next-line BlockStatement: read by the unit tests only
export function streamHubOf(server: Server): StreamHub | undefined {
  return hubs.get(server)
}

/** What the stream uses of the domain, each narrowed to the calls it makes (wired by the composition root). */
export interface StreamPorts {
  clock: Clock
  /** Checks the upgrade's token; a revoke or an expiry of the key closes its sockets (its watch). */
  keys: Pick<KeyService, 'verifyRequest' | 'watch'>
  /** Batches sent over the socket count against the workspace's rate limit like REST calls. */
  limits: Pick<LimitsService, 'consume'>
  /** The `runs` topic's source. */
  events: RunEventReader
  /** The `connector:<id>` topics' source, and where batches sent over the socket are stored. */
  ingestion: RecordReader & Pick<IngestionService, 'ingest'>
  /** The process's shared topic readers, woken by the change feed. */
  topicFeeds: TopicFeeds
  /**
   * Each key's open connections and their topics across replicas (`stream_sockets_per_key`,
   * `stream_subscriptions_per_key`).
   */
  sockets: Pick<StreamSocketQuotas, 'open' | 'start' | 'stop'>
  /** Absent: nothing is measured. */
  telemetry?: SocketTelemetry
  /** Where failures no client waits for are logged. */
  log: FailureLog
}

/** The operator's stream settings (src/config.ts holds their defaults). */
export interface StreamSettings {
  heartbeatMs: number
  /** Most messages a resume replays per topic before a `gap` (`AGENTOPS_STREAM_MAX_REPLAY`). */
  maxReplay: number
  /** Topics one connection may hold at once (`AGENTOPS_STREAM_MAX_SUBSCRIPTIONS`), the tiers' quota its ceiling. */
  maxSubscriptions: number
  maxBufferedBytes: number
  fallbackPollMs: number
  /** The REST body limit: a socket message may carry a batch this large, plus the JSON around it. */
  maxBodyBytes: number
}

export interface StreamAttachment {
  hub: StreamHub
  /** Serves an upgrade of /v1/stream: the server's upgrade router calls it. */
  upgrade: UpgradeHandler
  close(): Promise<void>
}

/**
 * Serves `/v1/stream` on the HTTP server's own port (the server's upgrade router hands its upgrades to `upgrade`):
 * the upgrade is authenticated before the handshake (a bad or missing token gets a plain HTTP 401 with the error
 * envelope), then the `ws` socket joins the hub.
 */
export function attachStream(
  server: Server,
  ports: StreamPorts,
  settings: StreamSettings,
  observer: SurfaceObserver = NO_OBSERVER,
): StreamAttachment {
  const { clock, keys } = ports
  // A bigger client message is refused by `ws` with close code 1009.
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: settings.maxBodyBytes + MESSAGE_ENVELOPE_BYTES,
  })
  refuseBadHandshakes(wss, clock)
  const failures = ports.log
  const hub = new StreamHub(
    {
      clock,
      sources: (topic, workspaceId) =>
        topic.kind === 'runs'
          ? runsSource(ports.events, workspaceId)
          : connectorSource(ports.ingestion, workspaceId, topic.connectorId, topic.name),
      feeds: ports.topicFeeds,
    },
    {
      heartbeatMs: settings.heartbeatMs,
      maxBufferedBytes: settings.maxBufferedBytes,
      fallbackPollMs: settings.fallbackPollMs,
      maxReplay: settings.maxReplay,
      // Stryker disable next-line ObjectLiteral: the server's metrics (messages sent, slow consumers closed), no answer of the API
      ...(ports.telemetry ? { telemetry: ports.telemetry } : {}),
      log: failures,
    },
  )
  hub.start()
  ports.sockets.start()
  hubs.set(server, hub)
  ports.telemetry?.readFrom(() => hub.snapshot().subscriptions)

  /** An upgrade of /v1/stream (the server's router, src/surface/upgrade.ts, sends it here). */
  const upgrade: UpgradeHandler = (req, socket, head, url) => {
    // Stryker disable next-line BlockStatement: reached only when the store fails the upgrade's key or slot, which no run has
    admit(req, socket, head, url).catch((err: unknown) => {
      failures.error({ err }, 'stream upgrade failed')
      refuseOnSocket(socket, clock, unavailable())
    })
  }

  /** Authenticates the upgrade, takes the key's slot, then completes the handshake and joins the hub. */
  const admit = async (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> => {
    const verified = await authenticate(keys, req, url)
    if (typeof verified === 'string') {
      refuseOnSocket(socket, clock, unauthenticated(verified))
      return
    }
    let connection: StreamConnection | undefined
    let lease: SocketLease
    try {
      // The key's slot is taken before the handshake, so a socket past the key's quota is refused like a bad
      // token: a plain HTTP answer with the envelope (403 quota_exceeded). A lapsed lease closes the socket.
      // Stryker disable next-line all: the lapse callback runs only when the server could not renew the key's slot in its store for 30 s (a store outage no run has)
      lease = await ports.sockets.open(verified.workspace, verified.keyId, () =>
        // Stryker disable next-line all: the lapse callback (see above)
        connection?.closeWith(CLOSE_SLOT_LAPSED, SLOT_LAPSED_REASON),
      )
    } catch (err) {
      // Stryker disable next-line ConditionalExpression: a store failure taking the slot (see admit's catch above)
      if (!(err instanceof ApiError)) throw err
      refuseOnSocket(socket, clock, err)
      return
    }
    // Whichever way the socket ends (handshake cut short, either side closing), its slot is freed at once.
    const held = lease
    // Stryker disable all: freeing the key's slot (stream_sockets_per_key) is done twice on purpose, here and in forget() below, so either alone frees it; a slot never freed shows only after the key's 200th open socket (enterprise), which no run opens
    if (socket.destroyed) held.close()
    else socket.once('close', () => held.close())
    // Stryker restore all
    wss.handleUpgrade(req, socket, head, (ws) => {
      const joined = hub.add(
        ws,
        {
          ...callerFromKey(verified),
          // The server's ceiling (below) is 100 in every run, and so is every tier's
          // stream_subscriptions_per_socket: with or without the ceiling the bound is the same (held by
          // stream.subscriptions-per-connection).
          // Stryker disable next-line ObjectLiteral: equivalent in every run (above)
          maxSubscriptions: quotaLimit(verified.workspace, 'stream_subscriptions_per_socket', {
            // Stryker disable next-line all: equivalent in every run (above)
            stream_subscriptions_per_socket: settings.maxSubscriptions,
          }),
          keyTopics: held,
        },
        socketIngestor(ports, verified),
      )
      connection = joined
      // A revoke or an expiry of the key closes the socket (4401): an announced revoke at once, an expiry or a revoke
      // nobody announced at the watch's next read of the key (src/domain/keys/watch.ts).
      const unwatch = keys.watch.watch(verified.keyId, (end) => joined.credentialEnded(end))
      // Stryker disable all: forget() is the cleanup of a socket already closed, which sends nothing more either way, and frees the slot a second time (see above)
      const forget = () => {
        unwatch()
        hub.remove(joined)
        held.close()
      }
      // Stryker restore all
      // Binary frames are read as UTF-8 text too: the protocol is JSON either way.
      ws.on('message', (data) => joined.handleText(data.toString()))
      ws.on('pong', () => joined.pong())
      // Stryker disable next-line all: the observer feeds the server's socket metrics (src/surface/observe.ts), never an answer of the API
      observer.socket('stream', 'open')
      // Stryker disable next-line StringLiteral,BlockStatement: forget() cleans up a socket already closed (above): without it the connection lingers in memory until its next unanswered heartbeat, and no answer changes
      ws.on('close', () => {
        forget()
        // Stryker disable next-line all: the observer feeds the server's socket metrics (src/surface/observe.ts), never an answer of the API
        observer.socket('stream', 'close')
      })
      // Stryker disable next-line StringLiteral: ws closes the socket after an error, so the close handler above runs anyway
      ws.on('error', forget)
    })
  }
  return {
    hub,
    upgrade,
    // Stryker disable all: only the server's shutdown calls close(): no request is answered then
    async close() {
      hubs.delete(server)
      hub.stop()
      await ports.sockets
        .stop()
        .catch((err: unknown) => failures.error({ err }, 'stream socket rows removal failed'))
      // Give the 1001 close frames a moment to reach their peers before cutting whatever is left.
      const deadline = Date.now() + 1000
      while (wss.clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      for (const client of wss.clients) client.terminate()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
    },
  }
}

// Stryker restore all
/** Batches sent over the socket count against the workspace's rate limit like REST calls, then store the same way. */
function socketIngestor(
  { limits, ingestion }: Pick<StreamPorts, 'limits' | 'ingestion'>,
  verified: VerifiedKey,
): StreamIngestor {
  const workspace = verified.workspace
  return async (connectorId, records) => {
    const decision = await limits.consume(workspace)
    if (decision.refusedBy) throw rateLimited(decision.refusedBy)
    return ingestion.ingest(
      { id: workspace.id, policyClasses: workspace.policyClasses },
      connectorId,
      records,
    )
  }
}

/** The upgrade's credentials, checked once: a key revoked or expired later ends the socket through the key watch. */
function authenticate(
  keys: StreamPorts['keys'],
  req: IncomingMessage,
  url: URL,
): Promise<VerifiedKey | KeyRefusal> {
  return keys.verifyRequest({
    authorization: req.headers.authorization,
    accessToken: url.searchParams.get('access_token') ?? undefined,
  })
}
