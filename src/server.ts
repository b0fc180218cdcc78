import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import { type Config, loadConfig } from './config.js'
import { type Clock, systemClock } from './domain/clock.js'
import { CursorKeyring, installCursorKeyring } from './domain/cursors.js'
import { newId } from './domain/ids.js'
import { answerClientErrors, unreadableRequestResponse } from './http/client-error.js'
import { requestTracker } from './http/in-flight.js'
import { type OperatorHandler, operatorEndpoints } from './observability/endpoints.js'
import { createLogger, type Logger } from './observability/logger.js'
import { createMetrics } from './observability/metrics.js'
import { createSurfaceObserver } from './observability/observer.js'
import { Readiness } from './observability/readiness.js'
import { createServices, type Services } from './services.js'
import { type Db, timesStatements, timesTransactions } from './store/db.js'
import { storeGauges } from './store/gauges.js'
import { migrate } from './store/migrations/index.js'
import { openDb } from './store/open.js'
import { reportStoreProblemsTo } from './store/problems.js'
import { sharedSecret, storedSecret } from './store/repos/server-secrets.js'
import type { SurfaceObserver } from './surface/observe.js'
import { attachSockets, createApp } from './transports.js'

export interface RunningServer {
  url: string
  port: number
  services: Services
  httpServer: Server
  /** The separate metrics listener when AGENTOPS_METRICS_PORT is set. */
  metricsUrl?: string
  readiness: Readiness
  close(): Promise<void>
}

export interface StartOptions {
  config?: Partial<Config>
  clock?: Clock
  /** Use an already opened Db (tests); the server then does not close it. */
  db?: Db
  /** Told about every request and socket; default: the server's metrics and request log (src/observability). */
  observer?: SurfaceObserver
  /** Where the server logs (tests capture it); default pino on stdout at config.logLevel. */
  logger?: Logger
}

/**
 * Listens first, then opens and migrates the store, builds the services and serves HTTP + WebSocket on one port.
 * Until the app is built, `/readyz` says why not (`migrating`) and API requests are answered 503.
 */
export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  const config = loadConfig(process.env, options.config)
  const logger = options.logger ?? createLogger({ level: config.logLevel, pretty: config.logPretty })
  reportStoreProblemsTo(logger)
  const metrics = config.metrics ? createMetrics() : undefined
  // Metrics and the request log ride on the surface observer: on by default, as `npm start` runs.
  const observer = options.observer ?? createSurfaceObserver(metrics, logger)
  const readiness = new Readiness()
  const separateMetrics = metrics !== undefined && config.metricsPort !== undefined
  const operator = operatorEndpoints({
    readiness,
    ...(metrics && !separateMetrics ? { metrics } : {}),
    ...(config.metricsToken ? { metricsToken: config.metricsToken } : {}),
  })
  let api: ((req: IncomingMessage, res: ServerResponse) => unknown) | undefined
  const inFlight = requestTracker()
  const httpServer = await listen(
    (req, res) => {
      // Here rather than in a 'request' listener of its own: with two listeners Node copies its listener list on
      // every request.
      inFlight.track(req, res)
      if (operator(req, res)) return
      if (api) api(req, res)
      else starting(res)
    },
    config.port,
    config.host,
    config,
  )
  answerClientErrors(httpServer, options.clock ?? systemClock)
  const metricsServer = separateMetrics
    ? await listen(
        metricsOnly(
          operatorEndpoints({
            readiness,
            metrics,
            ...(config.metricsToken ? { metricsToken: config.metricsToken } : {}),
          }),
        ),
        config.metricsPort ?? 0,
        config.host,
        config,
      ).catch(async (err: unknown) => {
        await closeServer(httpServer)
        throw err
      })
    : undefined
  const ownsDb = !options.db
  let db: Db | undefined = options.db
  let services: Services
  try {
    db ??= await openDb(config.databaseUrl)
    readiness.migrating()
    const applied = await migrate(db)
    installCursorKeyring(await cursorKeyring(db, config))
    logger.info(
      { store: db.dialect, applied },
      applied.length > 0 ? 'migrations applied' : 'store schema up to date',
    )
    services = await createServices({
      db,
      clock: options.clock ?? systemClock,
      config,
      logger,
      ...(metrics ? { metrics } : {}),
    })
    if (metrics) {
      metrics.readGaugesFrom(storeGauges(db))
      const store = metrics.store
      if (timesTransactions(db)) db.timeTransactions((seconds) => store.transaction(seconds))
      if (timesStatements(db)) db.timeStatements((path, seconds) => store.statement(path, seconds))
    }
    const clock = services.clock
    api = getRequestListener(createApp(services, observer).fetch, {
      hostname: config.host,
      errorHandler: (err) => unreadableRequestResponse(err, clock),
    })
  } catch (err) {
    await closeServer(httpServer)
    if (metricsServer) await closeServer(metricsServer)
    if (ownsDb) await db?.close().catch(() => undefined)
    throw err
  }
  const store = db
  const attached = attachSockets(httpServer, services, observer)
  await services.start()
  readiness.ready(() => store.one('SELECT 1 AS ok'))
  const port = (httpServer.address() as AddressInfo).port
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  const metricsUrl = metricsServer
    ? `http://${host}:${(metricsServer.address() as AddressInfo).port}`
    : undefined
  logger.info(
    {
      url: `http://${host}:${port}`,
      store: store.dialect,
      metrics: metricsUrl ?? (metrics ? 'same port' : 'off'),
    },
    'server started',
  )
  let closing: Promise<void> | undefined
  return {
    url: `http://${host}:${port}`,
    port,
    services,
    httpServer,
    readiness,
    ...(metricsUrl ? { metricsUrl } : {}),
    close() {
      closing ??= (async () => {
        // First: /readyz answers 503 from now on, so a balancer stops sending this replica new requests, and every
        // answer tells its keep-alive client to reconnect (elsewhere).
        readiness.draining()
        inFlight.drain()
        logger.info({ drain_ms: config.shutdownDrainMs }, 'shutdown: draining')
        // Still listening until the balancer has had time to see the 503: stop sooner and the requests it sends
        // meanwhile find a closed port.
        if (config.shutdownDrainMs > 0) await new Promise((r) => setTimeout(r, config.shutdownDrainMs))
        const stopped = new Promise<void>((resolve) => httpServer.close(() => resolve()))
        // WebSockets close with 1001 so their clients resume with `since` on another replica.
        for (const a of attached) await a.close()
        await inFlight.settled(Math.max(0, config.shutdownGraceMs))
        httpServer.closeAllConnections?.()
        await stopped
        // Workers last: the scheduler and the outbox hand their leases back as they stop.
        await services.stop()
        if (ownsDb) await store.close()
        if (metricsServer) await closeServer(metricsServer)
        logger.info('shutdown: stopped')
        // The log writes in batches: what is pending goes out now, not at the next second or at exit.
        logger.flush()
      })()
      return closing
    },
  }
}

function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  port: number,
  host: string,
  timeouts: Pick<Config, 'headersTimeoutMs' | 'requestTimeoutMs'>,
): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    // Slowloris bounds set here, not left to Node's defaults (60 s for headers, 5 min for a request): a client that
    // trickles its headers or body is answered 408 and closed at the bound. Node looks for such connections every
    // connectionsCheckingInterval (30 s by default, which would stretch a 10 s bound to 40); once a second here.
    const server = createServer(
      {
        headersTimeout: timeouts.headersTimeoutMs,
        requestTimeout: timeouts.requestTimeoutMs,
        connectionsCheckingInterval: Math.min(1000, timeouts.headersTimeoutMs),
      },
      handler,
    )
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve(server)
    })
  })
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections?.()
  })
}

/** The API is not built yet (the store is being migrated): a retryable 503 in the spec's envelope. */
function starting(res: ServerResponse): void {
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', connection: 'close' })
  res.end(
    JSON.stringify({
      error: {
        code: 'unavailable',
        message: 'The server is starting (migrating its store); retry shortly',
        detail: {},
        request_id: newId('req'),
      },
    }),
  )
}

/** The metrics port answers the operator endpoints only. */
function metricsOnly(operator: OperatorHandler) {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (operator(req, res)) return
    res
      .writeHead(404, { 'content-type': 'text/plain' })
      .end('Not found: this port serves /metrics and /readyz\n')
  }
}

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
