import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { type Config, loadConfig } from './config.js'
import { type Clock, systemClock } from './domain/clock.js'
import { CursorKeyring, installCursorKeyring } from './domain/cursors.js'
import { attachGraphqlWs } from './graphql/ws.js'
import { createApp } from './http/app.js'
import { answerClientErrors } from './http/client-error.js'
import { createServices, type Services } from './services.js'
import { type Db, openDb } from './store/db.js'
import { migrate } from './store/migrations/index.js'
import { sharedSecret, storedSecret } from './store/repos/server-secrets.js'
import { attachStream } from './stream/attach.js'

export interface RunningServer {
  url: string
  port: number
  services: Services
  httpServer: Server
  close(): Promise<void>
}

export interface StartOptions {
  config?: Partial<Config>
  clock?: Clock
  /** Use an already opened Db (tests); the server then does not close it. */
  db?: Db
}

/** Attaches extra protocol handlers (the WebSocket stream) to the same HTTP server and port. */
export type ServerAttachment = (server: Server, services: Services) => { close(): Promise<void> } | undefined

// --- attachments: the stream feature adds one entry here ---
const ATTACHMENTS: ServerAttachment[] = [attachStream, attachGraphqlWs]

/** Opens the store (migrating it), builds the services and serves HTTP + WebSocket on one port. */
export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  const config = loadConfig(process.env, options.config)
  const ownsDb = !options.db
  const db = options.db ?? (await openDb(config.databaseUrl))
  await migrate(db)
  installCursorKeyring(await cursorKeyring(db, config))
  const services = await createServices({ db, clock: options.clock ?? systemClock, config })
  const app = createApp(services)
  const httpServer = await new Promise<Server>((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, () =>
      resolve(server as Server),
    ) as Server
    server.once('error', reject)
  })
  answerClientErrors(httpServer)
  const attached = ATTACHMENTS.map((attach) => attach(httpServer, services)).filter((a) => a !== undefined)
  const inFlight = trackRequests(httpServer)
  await services.start()
  const port = (httpServer.address() as AddressInfo).port
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  let closing: Promise<void> | undefined
  return {
    url: `http://${host}:${port}`,
    port,
    services,
    httpServer,
    close() {
      closing ??= (async () => {
        // Stop accepting; answers still in progress tell keep-alive clients to reconnect (elsewhere).
        inFlight.drain()
        const stopped = new Promise<void>((resolve) => httpServer.close(() => resolve()))
        // WebSockets close with 1001 so their clients resume with `since` on another replica.
        for (const a of attached) await a.close()
        await inFlight.settled(Math.max(0, config.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS))
        httpServer.closeAllConnections?.()
        await stopped
        // Workers last: the scheduler and the outbox hand their leases back as they stop.
        await services.stop()
        if (ownsDb) await db.close()
      })()
      return closing
    },
  }
}

export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000

const CURSOR_SECRET = 'cursor'

/**
 * The cursor secrets: the configured one (the stored one, if any, stays accepted as the previous one unless
 * another previous is configured), or the store's shared generated one.
 */
async function cursorKeyring(db: Db, config: Config): Promise<CursorKeyring> {
  if (!config.cursorSecret) return new CursorKeyring([await sharedSecret(db, CURSOR_SECRET, Date.now())])
  const previous = config.cursorSecretPrevious ?? (await storedSecret(db, CURSOR_SECRET))
  return new CursorKeyring(previous ? [config.cursorSecret, previous] : [config.cursorSecret])
}

/**
 * The requests a server is answering, so shutdown can wait for them. Live trace streams (SSE) never finish on
 * their own: shutdown does not wait for them, and their clients resume with Last-Event-ID.
 */
function trackRequests(server: Server) {
  const active = new Map<ServerResponse, boolean>()
  let draining = false
  const state = {
    /** From now on every answer (also those already being worked on) closes its connection. */
    drain(): void {
      draining = true
      for (const res of active.keys()) if (!res.headersSent) res.setHeader('connection', 'close')
    },
    /** Resolves once every answer that is not a live stream finished, or after `graceMs`. */
    async settled(graceMs: number): Promise<void> {
      const deadline = Date.now() + graceMs
      while (Date.now() < deadline && [...active.values()].some((streaming) => !streaming)) {
        await new Promise((r) => setTimeout(r, 25))
      }
    },
  }
  // One listener function for every response, not a closure (and a `once` wrapper) per request.
  function forget(this: ServerResponse): void {
    active.delete(this)
  }
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    active.set(res, (req.headers.accept ?? '').includes('text/event-stream'))
    res.on('close', forget)
    if (draining) res.setHeader('connection', 'close')
  })
  return state
}
