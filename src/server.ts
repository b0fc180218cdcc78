import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { type Config, loadConfig } from './config.js'
import { type Clock, systemClock } from './domain/clock.js'
import { attachGraphqlWs } from './graphql/ws.js'
import { createApp } from './http/app.js'
import { createServices, type Services } from './services.js'
import { type Db, openDb } from './store/db.js'
import { migrate } from './store/migrations/index.js'
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
  const services = await createServices({ db, clock: options.clock ?? systemClock, config })
  const app = createApp(services)
  const httpServer = await new Promise<Server>((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, () =>
      resolve(server as Server),
    ) as Server
    server.once('error', reject)
  })
  const attached = ATTACHMENTS.map((attach) => attach(httpServer, services)).filter((a) => a !== undefined)
  await services.start()
  const port = (httpServer.address() as AddressInfo).port
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  let closed = false
  return {
    url: `http://${host}:${port}`,
    port,
    services,
    httpServer,
    async close() {
      if (closed) return
      closed = true
      await services.stop()
      for (const a of attached) await a.close()
      httpServer.closeAllConnections?.()
      await new Promise<void>((resolve) => httpServer.close(() => resolve()))
      if (ownsDb) await db.close()
    },
  }
}
