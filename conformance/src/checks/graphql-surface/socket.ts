/** One graphql-transport-ws socket as the checks drive it. */
import WebSocket from 'ws'
import type { CheckContext } from '../../check.js'
import { obj } from '../../http.js'
import { socketUrl } from '../graphql.js'
import type { Json } from './answers.js'

/** One graphql-ws socket: its messages as they come, a wait for one, and how it closed. */
export interface GqlSocket {
  ws: WebSocket
  refused?: number
  messages: Json[]
  /** The WebSocket pings the deployment sent, counted from the handshake. */
  pings: number
  closed?: { code: number; reason: string }
  send(message: Json): void
  next(match: (m: Json) => boolean, timeoutMs: number): Promise<Json | undefined>
}

/**
 * Opens a graphql-transport-ws socket to the declared surface (`token` at the upgrade, `suffix` a path or query
 * appended to its URL), sends
 * `connection_init` with `init` and waits for its answer: an ack, a close, or a refused upgrade. `autoPong: false`
 * leaves the server's WebSocket pings unanswered.
 */
export function openGql(
  ctx: CheckContext,
  url: string,
  token: string | null,
  init: Json = {},
  suffix = '',
  options: { autoPong?: boolean } = {},
): Promise<GqlSocket> {
  ctx.http.budget.take()
  const ws = new WebSocket(socketUrl(url, suffix), 'graphql-transport-ws', {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    handshakeTimeout: ctx.config.timeoutMs,
    autoPong: options.autoPong ?? true,
  })
  ctx.opened(ws)
  const waiters = new Set<() => void>()
  const socket: GqlSocket = {
    ws,
    messages: [],
    pings: 0,
    send: (message) => ws.send(JSON.stringify(message)),
    next(match, timeoutMs) {
      return new Promise((resolve) => {
        const check = () => {
          const found = socket.messages.find(match)
          if (found || socket.closed || socket.refused !== undefined) {
            waiters.delete(check)
            clearTimeout(timer)
            resolve(found)
          }
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          resolve(undefined)
        }, timeoutMs)
        waiters.add(check)
        check()
      })
    },
  }
  const wake = () => {
    for (const w of [...waiters]) w()
  }
  ws.on('ping', () => {
    socket.pings++
  })
  ws.on('message', (data) => {
    try {
      socket.messages.push(obj(JSON.parse(String(data))))
    } catch {
      socket.messages.push({ unparseable: String(data) })
    }
    wake()
  })
  ws.once('close', (code, reason) => {
    socket.closed = { code, reason: reason.toString() }
    wake()
  })
  ws.once('unexpected-response', (_req, res) => {
    res.resume()
    socket.refused = res.statusCode ?? 0
    ws.terminate()
    wake()
  })
  ws.on('error', () => wake())
  ws.once('open', () => socket.send({ type: 'connection_init', payload: init }))
  return socket.next((m) => m.type === 'connection_ack', ctx.config.timeoutMs).then(() => socket)
}

/** The `next` payloads of operation `id`. */
export const payloadsOf = (s: GqlSocket, id: string): Json[] =>
  s.messages.filter((m) => m.id === id && m.type === 'next').map((m) => obj(m.payload))
