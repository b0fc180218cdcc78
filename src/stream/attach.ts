import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocketServer } from 'ws'
import { callerFromKey } from '../api/caller.js'
import { unavailable } from '../api/errors.js'
import { NO_OBSERVER, type SurfaceObserver } from '../api/observe.js'
import { STREAM_PATH } from '../api/paths.js'
import { connectorSource, runsSource } from '../api/topic-sources.js'
import { refuseUnknownPath, refuseUpgrade } from '../api/upgrade.js'
import { rateLimited, unauthenticated } from '../domain/errors.js'
import type { KeyRefusal } from '../domain/identity.js'
import type { VerifiedKey } from '../domain/keys/service.js'
import type { Services } from '../services.js'
import { DEFAULT_STREAM_OPTIONS, StreamHub, type StreamIngestor, type StreamOptions } from './hub.js'

/** Room for the JSON around an `ingest` message's records, on top of the REST body limit. */
const MESSAGE_ENVELOPE_BYTES = 64 * 1024

const hubs = new WeakMap<Server, StreamHub>()

/** The hub serving a server's stream (tests and diagnostics read its connection count). */
export function streamHubOf(server: Server): StreamHub | undefined {
  return hubs.get(server)
}

export interface StreamAttachment {
  hub: StreamHub
  close(): Promise<void>
}

/**
 * Serves `/v1/stream` on the HTTP server's own port: the upgrade is authenticated before the handshake (a bad or
 * missing token gets a plain HTTP 401 with the error envelope), then the `ws` socket joins the hub.
 */
export function attachStream(
  server: Server,
  services: Services,
  observer: SurfaceObserver = NO_OBSERVER,
  options: Partial<StreamOptions> = {},
): StreamAttachment {
  const settings: StreamOptions = {
    ...DEFAULT_STREAM_OPTIONS,
    ...(services.config.streamHeartbeatMs !== undefined
      ? { heartbeatMs: services.config.streamHeartbeatMs }
      : {}),
    ...(services.config.streamMaxBufferedBytes !== undefined
      ? { maxBufferedBytes: services.config.streamMaxBufferedBytes }
      : {}),
    ...(services.config.streamFallbackPollMs !== undefined
      ? { fallbackPollMs: services.config.streamFallbackPollMs }
      : {}),
    ...(services.metrics ? { telemetry: services.metrics.stream } : {}),
    ...options,
  }
  // A bigger client message is refused by `ws` with close code 1009.
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: services.config.maxBodyBytes + MESSAGE_ENVELOPE_BYTES,
  })
  const hub = new StreamHub(
    {
      clock: services.clock,
      sources: (topic, workspaceId) =>
        topic.kind === 'runs'
          ? runsSource(services.events, workspaceId)
          : connectorSource(services.ingestion, workspaceId, topic.connectorId, topic.name),
      feeds: services.topicFeeds,
    },
    settings,
  )
  hub.start()
  hubs.set(server, hub)
  services.metrics?.stream.readFrom(() => hub.snapshot().subscriptions)

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://stream.invalid')
    if (url.pathname !== STREAM_PATH) {
      // Leave foreign paths to another upgrade handler if there is one; otherwise answer like the HTTP side.
      if (server.listeners('upgrade').length > 1) return
      refuseUnknownPath(socket, services.clock, url.pathname)
      return
    }
    socket.on('error', () => socket.destroy())
    void authenticate(services, req, url).then(
      ({ verified, revalidate }) => {
        if (typeof verified === 'string') {
          refuseUpgrade(socket, services.clock, unauthenticated(verified))
          return
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          const connection = hub.add(
            ws,
            { ...callerFromKey(verified), revalidate },
            socketIngestor(services, verified),
          )
          // A revoke or an expiry of the key closes the socket at once (4401), not at the next heartbeat.
          const unwatch = services.keys.watch.watch(verified.keyId, (end) => connection.credentialEnded(end))
          const forget = () => {
            unwatch()
            hub.remove(connection)
          }
          // Binary frames are read as UTF-8 text too: the protocol is JSON either way.
          ws.on('message', (data) => connection.handleText(data.toString()))
          ws.on('pong', () => connection.pong())
          observer.socket('stream', 'open')
          ws.on('close', () => {
            forget()
            observer.socket('stream', 'close')
          })
          ws.on('error', forget)
        })
      },
      (err: unknown) => {
        console.error('[stream] upgrade failed:', err)
        refuseUpgrade(socket, services.clock, unavailable())
      },
    )
  }
  server.on('upgrade', onUpgrade)

  return {
    hub,
    async close() {
      server.off('upgrade', onUpgrade)
      hubs.delete(server)
      hub.stop()
      // Give the 1001 close frames a moment to reach their peers before cutting whatever is left.
      const deadline = Date.now() + 1000
      while (wss.clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      for (const client of wss.clients) client.terminate()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
    },
  }
}

/** Batches sent over the socket count against the workspace's rate limit like REST calls, then store the same way. */
function socketIngestor(services: Services, verified: VerifiedKey): StreamIngestor {
  const workspace = verified.workspace
  return async (connectorId, records) => {
    const decision = await services.limits.consume(workspace)
    if (!decision.allowed && decision.refusedBy) throw rateLimited(decision.refusedBy)
    return services.ingestion.ingest(
      { id: workspace.id, policyClasses: workspace.policyClasses },
      connectorId,
      records,
    )
  }
}

/** The upgrade's credentials, checked now and again while the socket lives (a key revoked later closes it). */
async function authenticate(
  services: Services,
  req: IncomingMessage,
  url: URL,
): Promise<{ verified: VerifiedKey | KeyRefusal; revalidate: () => Promise<VerifiedKey | KeyRefusal> }> {
  const credentials = {
    authorization: req.headers.authorization,
    accessToken: url.searchParams.get('access_token') ?? undefined,
  }
  const revalidate = () => services.keys.verifyRequest(credentials)
  return { verified: await revalidate(), revalidate }
}
