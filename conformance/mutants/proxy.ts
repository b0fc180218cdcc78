/**
 * A fault-injecting HTTP proxy (node:http, 127.0.0.1) between the suite and a deployment. A mutant rewrites
 * requests on their way in, answers on their way out, and webhook deliveries on their way to the suite's receiver
 * (deliveries are addressed to `<proxy>/__hooks/...` and forwarded to the real receiver).
 */
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type RequestOptions,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import WebSocket, { type RawData, WebSocketServer } from 'ws'
import type { SuiteConfig } from '../src/config.js'
import { closedBeforeAnswer, repeatable } from '../src/http.js'
import { completeSseEvents } from '../src/sse.js'
import { agents, decoded, joinedHeaders } from '../src/wire.js'

export type Json = Record<string, unknown>

export interface ProxiedRequest {
  method: string
  /** Path with query string. */
  path: string
  headers: Record<string, string>
  body: string
}

export interface ProxiedResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** Bytes sent instead of `body` (a compressed answer); `body` keeps the text for later rewrites. */
  bytes?: Buffer
  /**
   * A `text/event-stream` answer's events as they come, each block with its blank line (`body` is then empty): the
   * proxy relays each as it arrives, through the mutant's `response` with the block as `body`.
   */
  events?: AsyncIterable<SseBlock>
}

/** One server-sent event's lines with the blank line that ends it, and when it reached the proxy. */
export interface SseBlock {
  text: string
  at: number
}

export interface MutantContext {
  /** The deployment's identities, as the suite's config names them. */
  tokens: SuiteConfig['tokens']
  /** Sends a request to the deployment directly (for mutants that consult it). */
  upstream(req: ProxiedRequest): Promise<ProxiedResponse>
}

export interface Mutant {
  id: string
  description: string
  /** Check ids that must fail while this mutant is active. */
  targets: string[]
  /** Check id prefixes to run (default: the targets). */
  run?: string[]
  /** Rewrites a request before it reaches the deployment; returning a response answers it without forwarding. */
  request?(
    req: ProxiedRequest,
    ctx: MutantContext,
  ): Promise<ProxiedRequest | ProxiedResponse> | ProxiedRequest | ProxiedResponse
  /** Rewrites the deployment's answer. */
  response?(
    req: ProxiedRequest,
    res: ProxiedResponse,
    ctx: MutantContext,
  ): Promise<ProxiedResponse> | ProxiedResponse
  /**
   * Rewrites a webhook delivery on its way to the receiver; a response answers the deployment without delivering.
   * Awaited: what a mutant sends besides (a copy to another subscriber) arrives before the delivery goes on.
   */
  delivery?(req: ProxiedRequest): Promise<ProxiedRequest | ProxiedResponse> | ProxiedRequest | ProxiedResponse
  /**
   * Answers the deployment's WebSocket pings itself instead of relaying them to the client, so a client that answers
   * none still looks alive: a deployment that never drops a silent peer.
   */
  answersPings?: boolean
  /**
   * Answers a handshake ws refuses (a malformed key, an unknown version) as ws does by itself, a text/html 400 without
   * the envelope or the versions it speaks, instead of the envelope the deployment gives such a refusal.
   */
  plainHandshakeRefusals?: boolean
  /** Rewrites the headers of a stream (WebSocket) upgrade before it reaches the deployment. */
  upgrade?(headers: Record<string, string>, ctx: MutantContext): Record<string, string>
  /**
   * The path (with its query) a stream (WebSocket) upgrade goes to at the deployment; undefined refuses the upgrade
   * 404 without reaching it, as a gateway that routes the path nowhere (default: the path as the client sent it).
   */
  upgradePath?(path: string): string | undefined
  /**
   * Rewrites a JSON stream message on its way from the deployment to the client (`connection` tells the client's
   * connections apart); undefined drops it.
   */
  streamMessage?(message: Json, connection: object): Json | undefined
  /**
   * Whether the client's connection stays open when the deployment closed its own with `code` and `reason` (default:
   * never).
   */
  keepsOpen?(code: number, reason: string): boolean
  /** A client's stream connection closed. */
  streamClosed?(connection: object): void
  /**
   * Holds back the stream messages it matches until the next tick of a clock of `periodMs`, as a server that pushes
   * only on a periodic poll would; a message behind a held one waits with it, so the socket's order stays.
   */
  streamPoll?: { periodMs: number; holds(message: Json): boolean }
  /** Rewrites a JSON stream message on its way from the client to the deployment. */
  clientMessage?(message: Json, connection: object): Json
  /**
   * Holds back each server-sent event until the next tick of a clock of `periodMs` after it arrived, as a server
   * whose event stream reads only on a periodic poll would; events keep their order.
   */
  ssePoll?: { periodMs: number }
}

export const HOOK_PREFIX = '/__hooks'

/** The host names of this machine a receiver may listen on. */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

function flat(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers))
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v
  return out
}

/** How long the proxy waits for an answer (an event stream: for its head) before it answers 502. */
const ANSWER_MS = 30_000

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host', 'upgrade'])

/** `gone`, when given, ends an event stream's relay once the client left. */
async function send(
  base: string,
  req: ProxiedRequest,
  gone?: AbortSignal,
  answerMs = ANSWER_MS,
): Promise<ProxiedResponse> {
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !HOP.has(k)))
  const body = req.method !== 'GET' && req.method !== 'HEAD' ? req.body : ''
  // Framed by its length, as fetch frames a string body (Node would otherwise send a POST's or PATCH's as chunks),
  // and a POST or PUT without one says so (fetch's Content-Length: 0).
  if (body !== '' || req.method === 'POST' || req.method === 'PUT')
    headers['content-length'] = String(Buffer.byteLength(body))
  // `answerMs` bounds an answer: its head, and its body unless it is an event stream, which lives until the
  // deployment ends it or the client leaves (`gone`). A bound on the stream's whole life cut long checks' streams on
  // a slow machine, read by them as a deployment that stopped pushing.
  const timeout = new AbortController()
  const timer = setTimeout(
    () => timeout.abort(new DOMException('answer timed out', 'TimeoutError')),
    answerMs,
  )
  const signal = gone ? AbortSignal.any([timeout.signal, gone]) : timeout.signal
  // The path as it came, after the base's origin: never resolved against it (a path of `//host` stays a path).
  const { hostname, port } = new URL(base)
  const attempt = () =>
    upstreamRequest({ hostname, port, path: req.path, method: req.method, headers }, body, signal)
  try {
    let res: IncomingMessage
    try {
      res = await attempt()
    } catch (err) {
      // A kept-alive connection the other side closed as the request went out (a starved machine): once more, when
      // repeating is harmless (an idempotent method, or a POST under an Idempotency-Key), as the suite's client does.
      // So is a request whose reused connection was closed under it before any answer: the server closed it idle,
      // before reading the request (Node's advice for `reusedSocket`).
      const repeat =
        repeatable(req.method) ||
        headers['idempotency-key'] !== undefined ||
        (err as Lost).reusedSocket === true
      if (!repeat || !closedBeforeAnswer(err as Error)) throw err
      res = await attempt()
    }
    const head = joinedHeaders(res.rawHeaders)
    const out = Object.fromEntries(
      Object.entries(head).filter(([k]) => !HOP.has(k) && k !== 'content-encoding'),
    )
    const status = res.statusCode ?? 502
    // An event stream returns with its head: the bound ends here (finally), and the relay reads on without it.
    if ((out['content-type'] ?? '').startsWith('text/event-stream'))
      return { status, headers: out, body: '', events: sseBlocks(res) }
    const chunks: Buffer[] = []
    for await (const chunk of res) chunks.push(chunk as Buffer)
    const bytes = decoded(Buffer.concat(chunks), head['content-encoding'])
    return { status, headers: out, body: bytes.toString('utf8') }
  } finally {
    clearTimeout(timer)
  }
}

/** A failed exchange, saying whether it went out on a connection an earlier exchange had used. */
type Lost = Error & { reusedSocket?: boolean }

/** One request, answered with its head (the body still to read); fails as the connection or `signal` does. */
function upstreamRequest(
  target: RequestOptions,
  body: string,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    // The suite's own kept-alive connections (src/wire.ts): node:http rather than fetch, whose Web streams and
    // signals were most of the relay's CPU, with the idle timeout that keeps a request off a connection the server
    // is closing.
    const outgoing = httpRequest({ ...target, agent: agents.http, signal }, resolve)
    outgoing.once('error', (err: Lost) => {
      err.reusedSocket = outgoing.reusedSocket
      reject(err)
    })
    outgoing.end(body === '' ? undefined : body)
  })
}

/**
 * An event stream's blocks, each stamped as it arrived: the stream is read as it comes (not as the relay asks),
 * so a block's `at` is when the deployment sent it even while the relay holds an earlier one.
 */
function sseBlocks(body: AsyncIterable<Uint8Array>): AsyncIterable<SseBlock> {
  const queue: (SseBlock | Error | null)[] = []
  let wake: (() => void) | undefined
  const push = (item: SseBlock | Error | null) => {
    queue.push(item)
    wake?.()
  }
  void (async () => {
    const decoder = new TextDecoder()
    let pending = ''
    try {
      for await (const chunk of body) {
        const { events, rest } = completeSseEvents(pending + decoder.decode(chunk, { stream: true }))
        for (const text of events) push({ text, at: Date.now() })
        pending = rest
      }
      if (pending !== '') push({ text: pending, at: Date.now() })
      push(null)
    } catch (err) {
      push(err as Error)
    }
  })()
  return {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (queue.length === 0) await new Promise<void>((r) => (wake = r))
        const item = queue.shift()
        if (item === null) return
        if (item instanceof Error) throw item
        if (item !== undefined) yield item
      }
    },
  }
}

export interface SlowExchange {
  method: string
  path: string
  ms: number
  upstreamMs: number
}

export function isResponse(x: ProxiedRequest | ProxiedResponse): x is ProxiedResponse {
  return 'status' in x
}

/** Close codes a peer may not send itself (RFC 6455 §7.4.1); a relay turns them into a normal closure. */
const relayable = (code: number) => code >= 1000 && code < 5000 && ![1005, 1006, 1015].includes(code)

export class MutantProxy {
  private server: Server | undefined
  private readonly sockets = new Set<WebSocket>()
  mutant: Mutant | undefined
  port = 0
  /** With `relayHooks`: the origin of the receiver the last webhook registration named. */
  private hookOrigin = ''
  /** The latest exchanges that took a second or more here, with the deployment's share: what a timeout is told. */
  readonly slow: SlowExchange[] = []
  /** How long an answer may take (an event stream: its head); an event stream's relay ends when a side ends it. */
  answerMs = ANSWER_MS
  /** Requests received and not yet answered, by when they came (`performance.now()`). */
  private readonly inFlight = new Map<ProxiedRequest, number>()

  /**
   * `relayHooks`: the proxy stands alone in front of the deployment (mutants/serve.ts), so the suite gives its own
   * receiver's URL, not one under the proxy: a webhook registration's `url` is rewritten to the proxy's hook prefix
   * (deliveries pass the mutant's `delivery` on their way) and read back as the suite gave it.
   */
  constructor(
    private readonly target: string,
    private readonly receiverUrl: () => string,
    private readonly tokens: MutantContext['tokens'],
    private readonly relayHooks = false,
  ) {}

  /** The receiver deliveries go to when the proxy stands alone: the origin the suite registered last. */
  get relayedReceiver(): string {
    return this.hookOrigin
  }

  private hooksIn(req: ProxiedRequest): ProxiedRequest {
    if (!this.relayHooks || !/^\/v1\/webhooks(\/[^/?]+)?$/.test(pathOnly(req.path))) return req
    if (req.method !== 'POST' && req.method !== 'PATCH') return req
    const body = parseJson(req.body)
    if (!body || typeof body.url !== 'string' || body.url.startsWith(this.url)) return req
    let url: URL
    try {
      url = new URL(body.url)
    } catch {
      return req
    }
    // Only the suite's receiver (plain HTTP on loopback) is relayed; any other URL is a check's probe (a refused
    // registration, an unroutable host) and passes untouched, so it neither redirects later deliveries nor makes
    // the proxy call a host that is not this machine.
    if (url.protocol !== 'http:' || !LOOPBACK.has(url.hostname)) return req
    this.hookOrigin = url.origin
    return {
      ...req,
      body: JSON.stringify({ ...body, url: `${this.url}${HOOK_PREFIX}${url.pathname}${url.search}` }),
    }
  }

  private hooksOut(res: ProxiedResponse): ProxiedResponse {
    const mine = `${this.url}${HOOK_PREFIX}`
    if (!this.relayHooks || this.hookOrigin === '' || res.bytes || !res.body.includes(mine)) return res
    return { ...res, body: res.body.split(mine).join(this.hookOrigin) }
  }

  /** What this proxy saw take long: exchanges of a second or more, and requests still unanswered, one line each. */
  slowReport(): string[] {
    const now = performance.now()
    return [
      ...this.slow.map(
        (x) =>
          `${x.method} ${x.path}: ${Math.round(x.ms)} ms here, ${Math.round(x.upstreamMs)} ms of it waiting on the deployment or receiver`,
      ),
      ...[...this.inFlight].map(
        ([r, came]) => `${r.method} ${pathOnly(r.path)}: unanswered for ${Math.round(now - came)} ms`,
      ),
    ]
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** Listens on 127.0.0.1, on `port` when given (the reference lists it as its webhook target), else a free one. */
  async listen(port = 0): Promise<void> {
    const ctx: MutantContext = {
      tokens: this.tokens,
      upstream: (req) => send(this.target, req, undefined, this.answerMs),
    }
    this.server = createServer((inReq, outRes) => {
      const chunks: Buffer[] = []
      inReq.on('data', (c: Buffer) => chunks.push(c))
      inReq.on('end', async () => {
        let req: ProxiedRequest = {
          method: inReq.method ?? 'GET',
          path: inReq.url ?? '/',
          headers: flat(inReq.headers),
          body: Buffer.concat(chunks).toString('utf8'),
        }
        const received = req
        const came = performance.now()
        let upstreamMs = 0
        this.inFlight.set(received, came)
        // An event stream's relay ends when its client leaves (any other request is carried to its end, as before).
        const gone = new AbortController()
        const live = /text\/event-stream/i.test(req.headers.accept ?? '')
        if (live) outRes.once('close', () => gone.abort())
        const timed = async (target: string, r: ProxiedRequest) => {
          const began = performance.now()
          try {
            return await send(target, r, live ? gone.signal : undefined, this.answerMs)
          } finally {
            upstreamMs += performance.now() - began
          }
        }
        try {
          let res: ProxiedResponse
          if (req.path.startsWith(HOOK_PREFIX)) {
            const rewritten = this.mutant?.delivery ? await this.mutant.delivery(req) : req
            res = isResponse(rewritten)
              ? rewritten
              : await timed(this.receiverUrl(), {
                  ...rewritten,
                  path: rewritten.path.slice(HOOK_PREFIX.length) || '/',
                })
          } else {
            req = this.hooksIn(req)
            const rewritten = this.mutant?.request ? await this.mutant.request(req, ctx) : req
            if (isResponse(rewritten)) res = rewritten
            else {
              req = rewritten
              res = await timed(this.target, req)
              if (this.mutant?.response) res = await this.mutant.response(req, res, ctx)
            }
            res = this.hooksOut(res)
          }
          if (res.events) await this.relayEvents(req, res, res.events, outRes, ctx)
          else outRes.writeHead(res.status, res.headers).end(res.bytes ?? res.body)
        } catch (err) {
          // A delivery the receiver dropped without an answer is dropped on the deployment too, as the receiver
          // itself would have done it; a deployment that cannot be reached is a 502, as from any gateway.
          if (outRes.headersSent || req.path.startsWith(HOOK_PREFIX)) outRes.destroy()
          else outRes.writeHead(502, { 'content-type': 'text/plain' }).end(`proxy: ${(err as Error).message}`)
        } finally {
          this.inFlight.delete(received)
          const ms = performance.now() - came
          if (ms >= 1000) {
            this.slow.push({ method: received.method, path: pathOnly(received.path), ms, upstreamMs })
            if (this.slow.length > 50) this.slow.shift()
          }
        }
      })
    })
    this.relayStream(ctx)
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject)
      this.server!.listen(port, '127.0.0.1', () => resolve())
    })
    this.port = (this.server.address() as AddressInfo).port
  }

  /**
   * Relays a `text/event-stream` answer event by event as the deployment sends them: each block goes through the
   * mutant's `response` as the `body` of an answer with the stream's status and headers (an edit of one event, or ''
   * to drop it), and is held until the next tick of the mutant's `ssePoll` clock when it has one.
   */
  private async relayEvents(
    req: ProxiedRequest,
    head: ProxiedResponse,
    events: AsyncIterable<SseBlock>,
    out: ServerResponse,
    ctx: MutantContext,
  ): Promise<void> {
    out.writeHead(head.status, head.headers)
    out.flushHeaders()
    for await (const block of events) {
      const rewrite = this.mutant?.response
      const text = rewrite ? (await rewrite(req, { ...head, body: block.text }, ctx)).body : block.text
      const poll = this.mutant?.ssePoll
      if (poll) {
        const release = block.at + poll.periodMs - (block.at % poll.periodMs)
        // Timers run on another clock than Date.now(): waited until the wall clock says so.
        while (release > Date.now()) await new Promise((r) => setTimeout(r, release - Date.now()))
      }
      if (out.destroyed) return
      if (text !== '' && !out.write(text)) await once(out, 'drain')
    }
    out.end()
  }

  /**
   * Relays WebSocket upgrades to the deployment: the upstream socket opens first (with the mutant's headers), so
   * a refusal reaches the client as the same HTTP status; then messages flow both ways, JSON ones from the
   * deployment through the mutant's `streamMessage`, and the deployment's pings reach the client (its pongs come back).
   */
  private relayStream(ctx: MutantContext): void {
    // The subprotocol the deployment chose (graphql-transport-ws, say) is the one the client gets back.
    const negotiated = new WeakMap<object, string>()
    const wss = new WebSocketServer({
      noServer: true,
      handleProtocols: (_offered, req) => negotiated.get(req) || false,
    })
    // A handshake ws refuses here (a malformed key) was accepted upstream, whose socket then goes; the client gets
    // 400 in the envelope, as a gateway serving the API would answer it.
    const upstreams = new WeakMap<IncomingMessage, WebSocket>()
    wss.on('wsClientError', (err, socket, req) => {
      upstreams.get(req)?.terminate()
      if (this.mutant?.plainHandshakeRefusals) {
        socket.end(
          'HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-type: text/html\r\n' +
            `content-length: ${Buffer.byteLength(err.message)}\r\n\r\n${err.message}`,
        )
        return
      }
      // Named the way the reference profile names a refused header (the issue's path and the fields).
      const header = /\bSec-WebSocket-[A-Za-z]+\b/.exec(err.message)?.[0] ?? 'Upgrade'
      const detail = {
        issues: [{ location: 'header', path: header, message: err.message }],
        fields: [header],
      }
      // RFC 6455 §4.4: the versions ws speaks, named for a client whose version is not one of them.
      endWithEnvelope(socket, 400, 'invalid_request', err.message, detail, 'sec-websocket-version: 13, 8\r\n')
    })
    this.server!.on('upgrade', (inReq, socket, head) => {
      // A gateway relays WebSocket handshakes; any other upgrade (h2c, a POST asking for a WebSocket) goes on as the
      // plain request it also is, through the mutant's request and response hooks like any other.
      if (inReq.method !== 'GET' || String(inReq.headers.upgrade).toLowerCase() !== 'websocket') {
        asPlainRequest(this.server!, inReq, socket, head)
        return
      }
      let headers: Record<string, string> = {}
      if (inReq.headers.authorization) headers.authorization = inReq.headers.authorization
      if (this.mutant?.upgrade) headers = this.mutant.upgrade(headers, ctx)
      const offered = (inReq.headers['sec-websocket-protocol'] ?? '')
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '')
      const target = inReq.url ?? '/'
      if (!target.startsWith('/')) {
        // An absolute or asterisk form: the deployment is asked in origin form only, so it is refused here.
        socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n')
        return
      }
      const path = this.mutant?.upgradePath ? this.mutant.upgradePath(target) : target
      if (path === undefined) {
        // A gateway that serves the API answers a path it does not route the way the API does: the envelope.
        endWithEnvelope(socket, 404, 'not_found', 'No such endpoint')
        return
      }
      // The deployment's pings go to the client and its pongs back, so the deployment sees the client's liveness.
      const answersPings = this.mutant?.answersPings === true
      const upstream = new WebSocket(`${this.target.replace(/^http/, 'ws')}${path}`, offered, {
        headers,
        autoPong: answersPings,
      })
      upstream.once('unexpected-response', (_r, res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const body = Buffer.concat(chunks)
          const type = res.headers['content-type'] ?? 'application/json'
          socket.end(
            `HTTP/1.1 ${res.statusCode} ${STATUS_CODES[res.statusCode ?? 500] ?? ''}\r\n` +
              `content-type: ${type}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
          )
        })
      })
      upstream.once('error', () => socket.destroy())
      upstream.once('open', () => {
        if (upstream.protocol) negotiated.set(inReq, upstream.protocol)
        upstreams.set(inReq, upstream)
        wss.handleUpgrade(inReq, socket, head, (client) => {
          this.sockets.add(client).add(upstream)
          if (!answersPings) {
            upstream.on('ping', (data) => {
              if (client.readyState === client.OPEN) client.ping(data)
            })
            client.on('pong', (data) => {
              if (upstream.readyState === upstream.OPEN) upstream.pong(data)
            })
          }
          client.on('message', (data, isBinary) => {
            const rewrite = this.mutant?.clientMessage
            if (!rewrite || isBinary) return upstream.send(data, { binary: isBinary })
            try {
              upstream.send(JSON.stringify(rewrite(JSON.parse(String(data)) as Json, client)))
            } catch {
              upstream.send(data)
            }
          })
          const toClient = (data: RawData, isBinary: boolean) => {
            const rewrite = this.mutant?.streamMessage
            if (!rewrite || isBinary) return client.send(data, { binary: isBinary })
            let out: Json | undefined
            try {
              out = rewrite(JSON.parse(String(data)) as Json, client)
            } catch {
              return client.send(data)
            }
            if (out !== undefined) client.send(JSON.stringify(out))
          }
          const held: [RawData, boolean][] = []
          upstream.on('message', (data, isBinary) => {
            const poll = this.mutant?.streamPoll
            if (!poll || (held.length === 0 && (isBinary || !poll.holds(parsedOrEmpty(data)))))
              return toClient(data, isBinary)
            if (held.length === 0)
              setTimeout(
                () => {
                  for (const [d, b] of held.splice(0)) if (client.readyState === client.OPEN) toClient(d, b)
                },
                poll.periodMs - (Date.now() % poll.periodMs),
              )
            held.push([data, isBinary])
          })
          client.on('close', () => {
            this.mutant?.streamClosed?.(client)
            upstream.close()
          })
          upstream.on('close', (code, reason) => {
            if (!this.mutant?.keepsOpen?.(code, reason.toString()))
              client.close(relayable(code) ? code : 1000, reason)
          })
          client.on('error', () => upstream.terminate())
          upstream.on('error', () => client.terminate())
        })
      })
    })
  }

  async close(): Promise<void> {
    const server = this.server
    if (!server) return
    for (const ws of this.sockets) ws.terminate()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** A stream message as JSON, or an empty object when it is not a JSON object. */
function parsedOrEmpty(data: RawData): Json {
  try {
    const value: unknown = JSON.parse(String(data))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {}
  } catch {
    return {}
  }
}

/** Parses a JSON body, applies `edit`, and re-serialises; non-JSON bodies pass unchanged. */
export function editJson(res: ProxiedResponse, edit: (body: Json) => Json | undefined): ProxiedResponse {
  if (!(res.headers['content-type'] ?? '').includes('json')) return res
  let body: Json
  try {
    body = JSON.parse(res.body) as Json
  } catch {
    return res
  }
  const next = edit(body)
  return next === undefined ? res : { ...res, body: JSON.stringify(next) }
}

/** An answer in the spec's error envelope, as a mutated deployment would send it (request id `req_mutant`). */
export function errorAnswer(
  status: number,
  code: string,
  message: string,
  detail: Json = {},
): ProxiedResponse {
  return {
    status,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error: { code, message, detail, request_id: 'req_mutant' } }),
  }
}

/** Small helpers the mutants share. */
export const pathOnly = (p: string): string => p.split('?')[0] ?? p
export const query = (p: string): URLSearchParams => new URLSearchParams(p.split('?')[1] ?? '')
export const withQuery = (p: string, q: URLSearchParams): string =>
  `${pathOnly(p)}${q.size > 0 ? `?${q}` : ''}`

export function header(req: ProxiedRequest, name: string): string | undefined {
  return req.headers[name.toLowerCase()]
}

/** A JSON object body, or undefined for anything else. */
/** Edits the items of a JSON page (its `data` array); an answer without one is left as it is. */
export function editPageItems(res: ProxiedResponse, edit: (items: Json[]) => unknown[]): ProxiedResponse {
  return editJson(res, (b) => (Array.isArray(b.data) ? { ...b, data: edit(b.data as Json[]) } : undefined))
}

export function parseJson(body: string): Json | undefined {
  try {
    const v = JSON.parse(body) as unknown
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined
  } catch {
    return undefined
  }
}

/** Ends a raw connection with an answer in the §7 envelope, as a gateway serving the API answers what it refuses. */
function endWithEnvelope(
  socket: Duplex,
  status: number,
  code: string,
  message: string,
  detail: Json = {},
  moreHeaders = '',
): void {
  const body = JSON.stringify({ error: { code, message, detail, request_id: randomUUID() } })
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\n${moreHeaders}` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  )
}

/**
 * Hands an upgrade back to the proxy's HTTP server as a plain request (as the reference's upgrade router does, which
 * the suite cannot import): the head written back without its Upgrade header in front of what the socket still has
 * to deliver, the socket given to the server as a new connection.
 */
function asPlainRequest(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const headers = req.rawHeaders.flatMap((entry, i, raw) =>
    i % 2 === 0 && entry.toLowerCase() !== 'upgrade' ? [`${entry}: ${raw[i + 1]}`] : [],
  )
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`, ...headers]
  socket.unshift(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head]))
  server.emit('connection', socket)
}
