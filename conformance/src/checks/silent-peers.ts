/**
 * Sockets whose client answers none of the server's WebSocket pings, as a peer gone without a close looks (every
 * client library answers pings by itself; `ws` can be told not to): the deployment finds them by its pings and
 * frees them. The reference profile's choice (spec §4 says nothing of a peer gone without a close); each check waits
 * the deployment's ping period on a socket of its own.
 */
import WebSocket from 'ws'
import type { Check } from '../check.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { declaredSurface } from './graphql.js'
import { openGql } from './graphql-surface/index.js'
import { connect } from './stream.js'

/**
 * Why a socket whose client answers no ping was not dropped as a gone peer (undefined: it was): no ping came (the
 * socket's own count, from its handshake on: the first ping may come with the answer to it), or it stayed open for
 * the whole wait. The socket is terminated either way.
 */
async function silentPeerProblem(
  what: string,
  socket: { ws: WebSocket; readonly pings: number },
  wait: number,
): Promise<string | undefined> {
  const { ws } = socket
  let timer: NodeJS.Timeout | undefined
  let how = ''
  const closed =
    ws.readyState >= WebSocket.CLOSING ||
    (await new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), wait)
      ws.once('close', (code, reason) => {
        how = ` (closed ${code}${reason.length > 0 ? ` ${short(reason.toString())}` : ''})`
        resolve(true)
      })
    }))
  clearTimeout(timer)
  ws.terminate()
  if (socket.pings === 0)
    return `no WebSocket ping reached ${what} ${closed ? `before it was closed${how}` : `within ${wait} ms`}: the deployment pings no peer, so none that is gone is found`
  if (!closed) return `${what} that answered none of ${socket.pings} pings stayed open for ${wait} ms`
  return undefined
}

export const silentPeerChecks: Check[] = [
  {
    id: 'stream.silent-peer-dropped',
    title:
      'A stream connection whose client answers none of the server’s WebSocket pings is dropped within the wait, after at least one ping came (a peer gone without a close frees its socket); one that answers them stays connected (stream.protocol-messages)',
    level: 'profile',
    clauses: ['S1.2'],
    // Waits on the deployment's ping period, on a connection of its own.
    overlap: true,
    async run(ctx) {
      const stream = await connect(ctx, ctx.config.tokens.primary, '', '/v1/stream', { autoPong: false })
      if (!('ws' in stream)) fail(`the stream refused the primary token: ${stream.refused}`)
      const problem = await silentPeerProblem('a stream connection', stream, ctx.config.waitMs)
      assert(problem === undefined, problem ?? '')
    },
  },
  {
    id: 'graphql.ws-silent-peer-dropped',
    title:
      'A graphql-ws socket whose client answers none of the server’s WebSocket pings is cut within the wait, after at least one ping came, as on /v1/stream (stream.silent-peer-dropped)',
    level: 'profile',
    clauses: ['S4.15', 'S1.2'],
    // Waits on the deployment's ping period, on a socket of its own.
    overlap: true,
    async run(ctx) {
      const url = declaredSurface(ctx)
      const gql = await openGql(ctx, url, ctx.config.tokens.primary, {}, '', { autoPong: false })
      if (!gql.messages.some((m) => m.type === 'connection_ack'))
        fail(`a graphql-ws socket got no connection_ack: ${gql.refused ?? short(gql.closed ?? gql.messages)}`)
      const problem = await silentPeerProblem('a graphql-ws socket', gql, ctx.config.waitMs)
      assert(problem === undefined, problem ?? '')
    },
  },
]
