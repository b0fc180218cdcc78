import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { type FormattedExecutionResult, GraphQLError } from 'graphql'
import { CloseCode } from 'graphql-ws'
import { useServer } from 'graphql-ws/use/ws'
import { WebSocketServer } from 'ws'
import { ApiError, unauthenticated } from '../domain/errors.js'
import type { KeyRefusal } from '../domain/identity.js'
import { newId } from '../domain/ids.js'
import type { VerifiedKey } from '../domain/keys/service.js'
import type { AuthContext } from '../http/context.js'
import type { Services } from '../services.js'
import { STREAM_PATH } from '../stream/path.js'
import { createContext } from './context.js'
import { formatError } from './errors.js'
import { GRAPHQL_PATH } from './http.js'
import { prepare } from './prepare.js'
import { graphqlSchema } from './schema.js'

interface Caller {
  auth: AuthContext
  /** Checks the token again (a key revoked after the socket opened stops new subscriptions). */
  revalidate(): Promise<VerifiedKey | KeyRefusal>
}

function toAuth(v: VerifiedKey): AuthContext {
  return {
    workspaceId: v.workspace.id,
    keyId: v.keyId,
    identity: v.identity,
    scopes: v.scopes,
    workspace: v.workspace,
  }
}

/** An ApiError as graphql-ws sends it: a GraphQL error whose extensions are the envelope's fields. */
function wsError(err: ApiError, requestId: string): GraphQLError {
  const formatted = formatError(new GraphQLError(err.message, { originalError: err }), requestId)
  return new GraphQLError(formatted.message, { extensions: formatted.extensions })
}

/**
 * Subscriptions over graphql-ws (`graphql-transport-ws`) on a WebSocket upgrade of /v1/graphql, on the HTTP
 * server's own port. The token is checked like /v1/stream's: `Authorization` or `?access_token=` at the upgrade (a
 * bad one is a plain HTTP 401 with the envelope), or the `authorization` of the `connection_init` payload.
 * Every subscribe counts against the workspace's rate limit, like a REST request.
 */
export function attachGraphqlWs(server: Server, services: Services): { close(): Promise<void> } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 256 * 1024 })
  const callers = new WeakMap<object, Caller>()
  const upgradeAuth = new WeakMap<IncomingMessage, Caller>()

  // Bearer parsing is the key service's (one rule for HTTP, the stream and GraphQL); no credential at the upgrade
  // leaves the connection_init payload to carry one.
  const verifyWith = (authorization: string | undefined, accessToken: string | null) =>
    authorization !== undefined || (accessToken !== null && accessToken !== '')
      ? () => services.keys.verifyRequest({ authorization, accessToken: accessToken ?? undefined })
      : undefined

  const disposable = useServer(
    {
      schema: graphqlSchema(),
      onConnect: async (ctx) => {
        let caller = upgradeAuth.get(ctx.extra.request)
        if (!caller) {
          const payload = ctx.connectionParams ?? {}
          const header = typeof payload.authorization === 'string' ? payload.authorization : undefined
          const revalidate = verifyWith(header, null)
          const verified = revalidate ? await revalidate() : 'missing'
          if (typeof verified === 'string' || !revalidate) {
            ctx.extra.socket.close(CloseCode.Unauthorized, unauthenticated(verified as KeyRefusal).message)
            return false
          }
          caller = { auth: toAuth(verified), revalidate }
        }
        callers.set(ctx.extra.socket, caller)
        return true
      },
      onSubscribe: async (ctx, _id, payload) => {
        const requestId = newId('req', services.clock.now())
        const caller = callers.get(ctx.extra.socket)
        if (!caller) return [wsError(unauthenticated('missing'), requestId)]
        const verified = await caller.revalidate()
        if (typeof verified === 'string') {
          ctx.extra.socket.close(CloseCode.Unauthorized, 'unauthenticated')
          return [wsError(unauthenticated(verified), requestId)]
        }
        const decision = await services.limits.consume(verified.workspace)
        if (!decision.allowed && decision.refusedBy) {
          const w = decision.refusedBy
          return [
            wsError(
              new ApiError(
                'rate_limited',
                `The workspace used its ${w.quota} requests of the ${w.name} window; retry in ${w.resetSeconds} s`,
                {
                  window: w.name,
                  limit: w.quota,
                  window_seconds: w.windowSeconds,
                  reset_at: new Date(w.windowStart + w.windowSeconds * 1000).toISOString(),
                  retry_after_seconds: w.resetSeconds,
                },
              ),
              requestId,
            ),
          ]
        }
        const variables = payload.variables ?? {}
        const prepared = prepare(payload.query, payload.operationName, variables)
        if (!prepared.ok) {
          return prepared.errors.map((e) => {
            const f = formatError(e, requestId)
            return new GraphQLError(f.message, { extensions: f.extensions })
          })
        }
        return {
          schema: graphqlSchema(),
          document: prepared.document,
          operationName: payload.operationName ?? null,
          variableValues: variables,
          contextValue: createContext(services, toAuth(verified), requestId),
        }
      },
      // graphql-ws sends a result unchanged when this returns nothing; errors get the envelope's extensions.
      onNext: (_ctx, _id, _payload, args, result): FormattedExecutionResult | undefined => {
        if (!result.errors?.length) return undefined
        const requestId = (args.contextValue as { requestId?: string } | undefined)?.requestId ?? ''
        return { ...result, errors: result.errors.map((e) => formatError(e, requestId)) }
      },
    },
    wss,
  )

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://graphql.invalid')
    if (url.pathname !== GRAPHQL_PATH) {
      if (url.pathname === STREAM_PATH) return // the stream's own handler answers
      refuse(
        socket,
        services,
        404,
        'Not Found',
        new ApiError('not_found', 'No such endpoint', { path: url.pathname }),
      )
      return
    }
    socket.on('error', () => socket.destroy())
    const revalidate = verifyWith(req.headers.authorization, url.searchParams.get('access_token'))
    const verified = revalidate ? revalidate() : Promise.resolve(undefined)
    verified.then(
      (result) => {
        if (typeof result === 'string') {
          const err = unauthenticated(result)
          refuse(socket, services, 401, 'Unauthorized', err, err.headers)
          return
        }
        if (result && revalidate) upgradeAuth.set(req, { auth: toAuth(result), revalidate })
        wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req))
      },
      (err: unknown) => {
        console.error('[graphql-ws] upgrade failed:', err)
        refuse(
          socket,
          services,
          503,
          'Service Unavailable',
          new ApiError('unavailable', 'The store does not answer'),
        )
      },
    )
  }
  server.on('upgrade', onUpgrade)

  return {
    async close() {
      server.off('upgrade', onUpgrade)
      for (const client of wss.clients) client.terminate()
      await disposable.dispose()
    },
  }
}

function refuse(
  socket: Duplex,
  services: Services,
  status: number,
  statusText: string,
  error: ApiError,
  headers: Record<string, string> = {},
): void {
  const requestId = newId('req', services.clock.now())
  const body = JSON.stringify({
    error: { code: error.code, message: error.message, detail: error.detail, request_id: requestId },
  })
  const lines = [
    `HTTP/1.1 ${status} ${statusText}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ]
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`)
}
