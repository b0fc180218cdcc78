/**
 * Requests that ask to change protocol (`Connection: Upgrade`), written as a test needs them rather than as a
 * WebSocket client builds them: a target no client would send, an upgrade to another protocol than WebSocket (h2c,
 * as `curl --http2` asks on every http:// request), a handshake with a bad key. Each counts against the run's
 * request budget like any other.
 */
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { CheckContext } from './check.js'

/** How the deployment answered: switched protocols (101), answered over HTTP, or cut the connection. */
export type UpgradeAnswer =
  | { switched: true }
  | { switched: false; status: number; contentType: string; body: string; headers: Record<string, string> }
  | { error: string }

/** The most of an answer's body that is read. */
const BODY_BYTES = 8192

/** What a WebSocket handshake sends beside its Upgrade header: a key of the right form, version 13. */
export const WEBSOCKET_HANDSHAKE: Readonly<Record<string, string>> = {
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-version': '13',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
}

/** What sendUpgrade sends beside the URL and headers. */
export interface UpgradeOptions {
  /** GET unless given. */
  method?: string
  /** A JSON body (sent with its Content-Type and Content-Length). */
  body?: string
  /** The request target written as is (say an absolute form no client sends), in place of the URL's path. */
  target?: string
}

/**
 * Sends a request to `url` with `headers`, and reads its answer; a 101 ends the exchange there (the socket is
 * dropped).
 */
export function sendUpgrade(
  ctx: CheckContext,
  url: string,
  headers: Record<string, string>,
  options: UpgradeOptions = {},
): Promise<UpgradeAnswer> {
  ctx.http.budget.take()
  const to = new URL(url.replace(/^ws/, 'http'))
  const request = to.protocol === 'https:' ? httpsRequest : httpRequest
  const body =
    options.body === undefined
      ? {}
      : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(options.body)) }
  return new Promise((resolve) => {
    const req = request({
      method: options.method ?? 'GET',
      host: to.hostname,
      port: to.port,
      path: options.target ?? `${to.pathname}${to.search}`,
      headers: { host: to.host, ...headers, ...body },
      timeout: ctx.config.timeoutMs,
    })
    req.once('response', (res) => {
      let body = ''
      const done = () =>
        resolve({
          switched: false,
          status: res.statusCode ?? 0,
          contentType: res.headers['content-type'] ?? '',
          body,
          headers: Object.fromEntries(
            Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
          ),
        })
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        if (body.length < BODY_BYTES) body += chunk
      })
      res.once('end', done)
      res.once('error', done)
    })
    req.once('upgrade', (_res, socket) => {
      socket.destroy()
      resolve({ switched: true })
    })
    req.once('timeout', () => req.destroy(new Error(`no answer within ${ctx.config.timeoutMs} ms`)))
    req.once('error', (err) => resolve({ error: err.message }))
    req.end(options.body)
  })
}

/** The answer in a failure message: its status, 101, or the transport error. */
export function describeAnswer(answer: UpgradeAnswer): string {
  if ('error' in answer) return `no answer (${answer.error})`
  return answer.switched ? '101' : String(answer.status)
}
