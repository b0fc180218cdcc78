import type { IncomingMessage } from 'node:http'
import {
  type DocumentNode,
  type FormattedExecutionResult,
  GraphQLError,
  getOperationAST,
  Kind,
} from 'graphql'
import {
  CloseCode,
  type ConnectionInitMessage,
  type Server as GraphqlWsServer,
  handleProtocols,
  makeServer,
} from 'graphql-ws'
import { type WebSocket, WebSocketServer } from 'ws'
import type { Clock } from '../domain/clock.js'
import { ApiError, unauthenticated } from '../domain/errors.js'
import type { FailureLog } from '../domain/failure-log.js'
import type { KeyRefusal } from '../domain/identity.js'
import { newId } from '../domain/ids.js'
import type { KeyService, VerifiedKey } from '../domain/keys/service.js'
import { rateLimited } from '../domain/limits/rate-limit.js'
import type { LimitsService } from '../domain/limits/service.js'
import type { SocketLease, StreamSocketQuotas } from '../domain/quotas/stream-sockets.js'
import { type AuthContext, callerFromKey } from '../surface/caller.js'
import { unavailable } from '../surface/errors.js'
import { CLOSE_SLOT_LAPSED, SLOT_LAPSED_REASON } from '../surface/key-slot.js'
import { NO_OBSERVER, type SurfaceObserver } from '../surface/observe.js'
import { CLOSE_SLOW_CONSUMER, countSlowConsumer, SLOW_CONSUMER_REASON } from '../surface/slow-consumer.js'
import { refuseOnSocket } from '../surface/socket-refusal.js'
import type { SocketTelemetry } from '../surface/socket-telemetry.js'
import { refuseBadHandshakes, type UpgradeHandler } from '../surface/upgrade.js'
import { createContext } from './context.js'
import { formatError } from './errors.js'
import type { GraphqlPorts } from './ports.js'
import { prepare } from './prepare.js'
import { graphqlSchema } from './schema.js'

/**
 * How long a socket may stay open before its `connection_init` (then 4408). graphql-ws's default is 3 s, which a
 * client on a loaded CI machine missed (the reference server is used as a stateful mock there); 10 s still bounds
 * an idle unauthenticated socket.
 */
const CONNECTION_INIT_WAIT_MS = 10_000

/** What graphql-ws uses of the domain, each narrowed to the calls it makes (wired by the composition root). */
export interface GraphqlWsPorts {
  clock: Clock
  /**
   * Checks the token at the upgrade or in connection_init, and again on each subscribe; its watch (`keys.watch`)
   * closes a socket whose key is revoked or expires while it is open.
   */
  keys: Pick<KeyService, 'verifyRequest' | 'watch'>
  /** Every subscribe counts against the workspace's rate limit, like a REST request. */
  limits: Pick<LimitsService, 'consume'>
  /** What resolvers and subscriptions call: the same ports as GraphQL over HTTP. */
  resolvers: GraphqlPorts
  /**
   * Each key's open sockets and subscriptions across replicas (`stream_sockets_per_key`,
   * `stream_subscriptions_per_key`), shared with /v1/stream.
   */
  sockets: Pick<StreamSocketQuotas, 'open'>
  /** Absent: nothing is measured. */
  telemetry?: Pick<SocketTelemetry, 'messageSent' | 'slowConsumerClosed' | 'readFrom'>
  /** Where failures no client waits for are logged. */
  log: FailureLog
}

export interface GraphqlWsSettings {
  /** A socket with more than this many bytes unsent is closed with 4008 (`AGENTOPS_STREAM_MAX_BUFFERED_BYTES`). */
  maxBufferedBytes: number
  /** Most messages a subscription's `since` replays before a `gap`: the stream's (`AGENTOPS_STREAM_MAX_REPLAY`). */
  maxReplay: number
  /**
   * A ping this often, then as long to answer it before the peer is cut: the stream's heartbeat period
   * (`AGENTOPS_STREAM_HEARTBEAT_MS`), so both WebSocket surfaces find a peer gone without a close alike.
   */
  keepAliveMs: number
}

/** What graphql-ws's context carries of a connection (as in its `use/ws` adapter). */
interface Extra {
  readonly socket: WebSocket
  readonly request: IncomingMessage
}

interface Caller {
  auth: AuthContext
  /** Checks the token again (a key revoked after the socket opened stops new subscriptions). */
  revalidate(): Promise<VerifiedKey | KeyRefusal>
  /** The socket's slot among its key's, and its subscriptions among the key's topics. */
  lease: SocketLease
}

/** 4401 for a socket whose token is refused, its reason the message REST's 401 gives the same token. */
function closeUnauthenticated(socket: { close(code: number, reason: string): void }, why: KeyRefusal): void {
  socket.close(CloseCode.Unauthorized, unauthenticated(why).message)
}

/**
 * The close of a graphql-ws socket whose key holds its quota of sockets, when the key came in `connection_init`
 * (an upgrade that carried it is refused with a plain HTTP 403 and the envelope instead): 4403 Forbidden, the
 * reason naming the quota, its limit and its use (a close reason holds at most 123 bytes).
 */
function quotaCloseReason(err: ApiError): string {
  const { quota, limit, used } = err.detail ?? {}
  return `quota_exceeded: ${String(quota)} limit=${String(limit)} used=${String(used)}`
}

/** An ApiError as graphql-ws sends it: a GraphQL error whose extensions are the envelope's fields. */
function wsError(err: ApiError, requestId: string, failures: FailureLog): GraphQLError {
  const formatted = formatError(new GraphQLError(err.message, { originalError: err }), requestId, failures)
  return new GraphQLError(formatted.message, { extensions: formatted.extensions })
}

/** The root field a subscription operation selects (a fixed vocabulary: the schema's), for metrics. */
function subscriptionField(
  document: DocumentNode,
  operationName: string | null | undefined,
): string | undefined {
  const op = getOperationAST(document, operationName)
  if (op?.operation !== 'subscription') return undefined
  const first = op.selectionSet.selections[0]
  return first?.kind === Kind.FIELD ? first.name.value : undefined
}

/**
 * Subscriptions over graphql-ws (`graphql-transport-ws`) on a WebSocket upgrade of /v1/graphql, on the HTTP
 * server's own port (the server's upgrade router hands those upgrades to `upgrade`). The token is checked like
 * /v1/stream's: `Authorization` or `?access_token=` at the upgrade (a bad one is a plain HTTP 401 with the
 * envelope), or the `authorization` of the `connection_init` payload.
 * Every subscribe counts against the workspace's rate limit, like a REST request.
 */
export function serveGraphqlWs(
  ports: GraphqlWsPorts,
  settings: GraphqlWsSettings,
  observer: SurfaceObserver = NO_OBSERVER,
): { upgrade: UpgradeHandler; close(): Promise<void> } {
  const { clock, keys, limits } = ports
  const failures = ports.log
  const wss = new WebSocketServer({ noServer: true, maxPayload: 256 * 1024, handleProtocols })
  refuseBadHandshakes(wss, clock)
  /** Live subscriptions per socket, by operation id: their root field, counted when metrics are scraped. */
  const live = new Map<object, Map<string, string>>()
  const metrics = ports.telemetry
  metrics?.readFrom(() => {
    const subscriptions = new Map<string, number>()
    for (const ops of live.values())
      for (const field of ops.values()) subscriptions.set(field, (subscriptions.get(field) ?? 0) + 1)
    return subscriptions
  })
  const callers = new WeakMap<object, Caller>()
  const upgradeAuth = new WeakMap<IncomingMessage, Caller>()
  /** The subscriptions of each socket counted against its key, by operation id (given back as each completes). */
  const counted = new WeakMap<object, Set<string>>()

  /**
   * Takes the key's slot for a socket (`stream_sockets_per_key`), freed when the socket closes: the lease, or the
   * refusal.
   */
  const takeSlot = async (
    auth: AuthContext,
    socket: { once(event: 'close', listener: () => void): unknown },
    end: () => void,
  ): Promise<SocketLease | ApiError> => {
    try {
      const lease = await ports.sockets.open(auth.workspace, auth.keyId, end)
      socket.once('close', () => lease.close())
      return lease
    } catch (err) {
      if (err instanceof ApiError) return err
      throw err
    }
  }

  // Bearer parsing is the key service's (one rule for HTTP, the stream and GraphQL); no credential at the upgrade
  // leaves the connection_init payload to carry one.
  const verifyWith = (authorization: string | undefined, accessToken: string | null) =>
    authorization !== undefined || (accessToken !== null && accessToken !== '')
      ? () => keys.verifyRequest({ authorization, accessToken: accessToken ?? undefined })
      : undefined

  const protocol = makeServer<ConnectionInitMessage['payload'], Extra>({
    connectionInitWaitTimeout: CONNECTION_INIT_WAIT_MS,
    schema: graphqlSchema(),
    onConnect: async (ctx) => {
      let caller = upgradeAuth.get(ctx.extra.request)
      if (!caller) {
        const payload = ctx.connectionParams ?? {}
        const header = typeof payload.authorization === 'string' ? payload.authorization : undefined
        const revalidate = verifyWith(header, null)
        const verified = revalidate ? await revalidate() : 'missing'
        if (typeof verified === 'string' || !revalidate) {
          closeUnauthenticated(ctx.extra.socket, verified as KeyRefusal)
          return false
        }
        const auth = callerFromKey(verified)
        const socket = ctx.extra.socket
        const lease = await takeSlot(auth, socket, () => socket.close(CLOSE_SLOT_LAPSED, SLOT_LAPSED_REASON))
        if (lease instanceof ApiError) {
          ctx.extra.socket.close(CloseCode.Forbidden, quotaCloseReason(lease))
          return false
        }
        caller = { auth, revalidate, lease }
      }
      callers.set(ctx.extra.socket, caller)
      // A revoke or an expiry of the key closes the socket at once (4401), as on /v1/stream.
      const socket = ctx.extra.socket
      const unwatch = keys.watch.watch(caller.auth.keyId, (end) => closeUnauthenticated(socket, end))
      socket.once('close', unwatch)
      return true
    },
    onSubscribe: async (ctx, id, payload) => {
      const requestId = newId('req', clock.now())
      const caller = callers.get(ctx.extra.socket)
      if (!caller) return [wsError(unauthenticated('missing'), requestId, failures)]
      const verified = await caller.revalidate()
      if (typeof verified === 'string') {
        closeUnauthenticated(ctx.extra.socket, verified)
        return [wsError(unauthenticated(verified), requestId, failures)]
      }
      const decision = await limits.consume(verified.workspace)
      if (decision.refusedBy) return [wsError(rateLimited(decision.refusedBy), requestId, failures)]
      const variables = payload.variables ?? {}
      const prepared = prepare(payload.query, payload.operationName, variables)
      if (!prepared.ok) {
        return prepared.errors.map((e) => {
          const f = formatError(e, requestId, failures)
          return new GraphQLError(f.message, { extensions: f.extensions })
        })
      }
      const field = subscriptionField(prepared.document, payload.operationName)
      if (field) {
        // Each subscription holds one of its key's topics (stream_subscriptions_per_key) until it completes.
        const { granted, refusal } = await caller.lease.take(1)
        if (granted === 0) return [wsError(refusal ?? unavailable(), requestId, failures)]
        let held = counted.get(ctx.extra.socket)
        if (!held) {
          held = new Set()
          counted.set(ctx.extra.socket, held)
        }
        held.add(id)
      }
      // Stryker disable next-line all: `live` feeds the metrics only (the subscriptions gauge read at scrape time): no answer depends on it.
      if (field && metrics) {
        let ops = live.get(ctx.extra.socket)
        // Stryker disable next-line all: the metrics' `live` map (see above).
        if (!ops) {
          ops = new Map()
          live.set(ctx.extra.socket, ops)
        }
        ops.set(id, field)
      }
      return {
        schema: graphqlSchema(),
        document: prepared.document,
        operationName: payload.operationName ?? null,
        variableValues: variables,
        contextValue: createContext(ports.resolvers, callerFromKey(verified), requestId, settings.maxReplay),
      }
    },
    // graphql-ws sends a result unchanged when this returns nothing; errors get the envelope's extensions.
    onNext: (_ctx, _id, _payload, args, result): FormattedExecutionResult | undefined => {
      metrics?.messageSent()
      if (!result.errors?.length) return undefined
      const requestId = (args.contextValue as { requestId?: string } | undefined)?.requestId ?? ''
      return { ...result, errors: result.errors.map((e) => formatError(e, requestId, failures)) }
    },
    // graphql-ws sends its `complete` after this resolves: by then the key's count has the room back.
    onComplete: async (ctx, id) => {
      live.get(ctx.extra.socket)?.delete(id)
      if (counted.get(ctx.extra.socket)?.delete(id)) await callers.get(ctx.extra.socket)?.lease.release(1)
    },
    // Stryker disable next-line all: the metrics' `live` map (see above).
    onClose: (ctx) => {
      live.delete(ctx.extra.socket)
    },
  })
  const bound: SendBound = {
    maxBufferedBytes: settings.maxBufferedBytes,
    telemetry: metrics,
    failures,
  }
  wss.on('connection', (socket, request) => {
    // Stryker disable next-line all: the surface observer counts sockets for the metrics: no answer depends on it.
    observer.socket('graphql-ws', 'open')
    // Stryker disable next-line all: the surface observer counts sockets for the metrics: no answer depends on it.
    socket.once('close', () => observer.socket('graphql-ws', 'close'))
    serveSocket(protocol, socket, request, bound, settings.keepAliveMs)
  })

  /** An upgrade of /v1/graphql (the server's router, src/surface/upgrade.ts, sends it here). */
  const upgrade: UpgradeHandler = (req, socket, head, url) => {
    const revalidate = verifyWith(req.headers.authorization, url.searchParams.get('access_token'))
    const verified = revalidate ? revalidate() : Promise.resolve(undefined)
    verified
      .then((result) => {
        if (typeof result === 'string') {
          refuseOnSocket(socket, clock, unauthenticated(result))
          return
        }
        if (!result || !revalidate) {
          wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req))
          return
        }
        // The key's slot is taken before the handshake: past its quota, a plain HTTP 403 with the envelope.
        const auth = callerFromKey(result)
        return takeSlot(auth, socket, () => socket.destroy()).then((lease) => {
          if (lease instanceof ApiError) {
            refuseOnSocket(socket, clock, lease)
            return
          }
          if (socket.destroyed) lease.close()
          upgradeAuth.set(req, { auth, revalidate, lease })
          wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req))
        })
      })
      .catch((err: unknown) => {
        failures.error({ err }, 'graphql-ws upgrade failed')
        refuseOnSocket(socket, clock, unavailable())
      })
  }
  // Stryker disable next-line ObjectLiteral: only the server's shutdown calls close(): no request is answered then.
  return {
    upgrade,
    async close() {
      for (const client of wss.clients) client.terminate()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
    },
  }
}

/** How much may wait unsent on a socket, and where its slow-consumer closes are counted. */
interface SendBound {
  maxBufferedBytes: number
  telemetry: Pick<SocketTelemetry, 'slowConsumerClosed'> | undefined
  failures: FailureLog
}

/**
 * graphql-ws on one socket, as its `use/ws` adapter serves it except for writing. That adapter has a subscription
 * wait for each message to be flushed before taking its next, so a peer that stops reading stalls its
 * subscriptions unseen for as long as it likes (until a keep-alive ping goes unanswered, a cut no metric sees).
 * Here a message is written at once, as on /v1/stream, and the stream's slow-consumer rule bounds what may wait.
 */
function serveSocket(
  protocol: GraphqlWsServer<Extra>,
  socket: WebSocket,
  request: IncomingMessage,
  bound: SendBound,
  keepAliveMs: number,
): void {
  const stopKeepAlive = keepAlive(socket, keepAliveMs)
  let closed: ReturnType<GraphqlWsServer<Extra>['opened']> | undefined
  let ended = false
  // Once: at the close event, or earlier when the socket is closed as slow (its closing handshake waits behind
  // everything it did not read, and its subscriptions must not read on for it meanwhile).
  const end = (code: number, reason: string) => {
    if (ended) return
    ended = true
    stopKeepAlive()
    closed?.(code, reason).catch((err: unknown) => bound.failures.error({ err }, 'graphql-ws cleanup failed'))
  }
  socket.once('error', (err: Error & { code?: unknown }) => {
    // A peer that broke the WebSocket protocol (a message over the payload bound, a malformed frame): `ws` has
    // already closed the socket with the RFC 6455 code that says so (1009, 1002). The client's fault, not a failure
    // of this server for an operator to be told of.
    // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator,StringLiteral,MethodExpression: equivalent but for the log line, `ws` has already sent its close (1009, 1002), so the close below is a no-op on a closing socket
    if (typeof err.code === 'string' && err.code.startsWith('WS_ERR_')) return
    bound.failures.error({ err }, 'graphql-ws socket error')
    socket.close(CloseCode.InternalServerError, 'Internal server error')
  })
  closed = protocol.opened(
    {
      protocol: socket.protocol,
      send: (data) => sendUnlessSlow(socket, data, bound, end),
      close: (code, reason) => socket.close(code, reason),
      onMessage: (handle) =>
        socket.on('message', (data) => {
          if (ended) return // a socket closed as slow starts nothing new
          handle(data.toString()).catch((err: unknown) => {
            bound.failures.error({ err }, 'graphql-ws message handling failed')
            socket.close(CloseCode.InternalServerError, 'Internal server error')
          })
        }),
    },
    { socket, request },
  )
  socket.once('close', (code, reason) => end(code, reason.toString()))
}

/** Writes without waiting for the peer, unless it already leaves too much unsent: then closes it with 4008. */
function sendUnlessSlow(
  socket: WebSocket,
  data: string,
  bound: SendBound,
  end: (code: number, reason: string) => void,
): void {
  if (socket.readyState !== socket.OPEN) return
  if (countSlowConsumer(socket, bound.maxBufferedBytes, bound.telemetry)) {
    socket.close(CLOSE_SLOW_CONSUMER, SLOW_CONSUMER_REASON)
    end(CLOSE_SLOW_CONSUMER, SLOW_CONSUMER_REASON)
    return
  }
  socket.send(data)
}

/**
 * A ping every `periodMs`; a peer that has not answered one by the time as long again has passed is cut. The cut is
 * judged after the poll phase, as the stream's heartbeat is: a pong already waiting in the socket's buffer (the loop
 * was busy when the wait ended) is read first, so a slow event loop never cuts a healthy peer.
 */
function keepAlive(socket: WebSocket, periodMs: number): () => void {
  let pongWait: NodeJS.Timeout | undefined
  const ping = setInterval(() => {
    if (socket.readyState !== socket.OPEN) return
    let answered = false
    pongWait = setTimeout(
      () =>
        setImmediate(() => {
          if (!answered) socket.terminate()
        }),
      periodMs,
    )
    socket.once('pong', () => {
      answered = true
      clearTimeout(pongWait)
    })
    socket.ping()
  }, periodMs)
  return () => {
    clearInterval(ping)
    clearTimeout(pongWait)
  }
}
