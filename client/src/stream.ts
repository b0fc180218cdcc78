import type { StreamServerMessage } from '../generated/types.gen.js'

/** The part of a WebSocket the helper uses: the browser/Node 22 global and the `ws` package both fit. */
export interface WebSocketLike {
  send(data: string): void
  close(code?: number, reason?: string): void
  addEventListener(type: 'open', listener: () => void): void
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void
  addEventListener(type: 'error', listener: (event: unknown) => void): void
}

export interface SubscribeOptions {
  /** The API's base URL (`http(s)://…`); the stream is `ws(s)://…/v1/stream` on the same host. */
  baseUrl: string
  token: string
  /** `connector:<id>` and/or `runs`. */
  topics: string[]
  /** Resume after these per-topic `seq` values (e.g. a previous subscription's `since`). */
  since?: Record<string, number>
  /**
   * Opens the socket. Default: the global `WebSocket` with the token as `?access_token=` (browsers cannot set
   * headers). On Node 20 pass one built on the `ws` package, which can send `Authorization` instead:
   * `(url, token) => new WebSocket(url, { headers: { authorization: \`Bearer ${token}\` } })`.
   */
  connect?: (url: string, token: string) => WebSocketLike
  /** Reconnections in a row (without a message in between) before the iterator fails; default 5. */
  reconnects?: number
  /** First reconnection delay in ms, doubling with full jitter, capped at 30 s; default 250. */
  baseDelayMs?: number
}

/** Close codes after which reconnecting cannot help: the key was revoked or expired, or a message was refused. */
const FATAL_CLOSE = new Set([4401, 1008, 1009])

export interface StreamSubscription extends AsyncIterable<StreamServerMessage> {
  /** The last `seq` received per topic: what a reconnection (or a later subscription) resumes from. */
  readonly since: Readonly<Record<string, number>>
  close(): void
}

/**
 * Subscribes to stream topics and yields every server message except heartbeats and pongs. When the connection
 * drops (network, restart, the slow-consumer close 4008) it reconnects with backoff and re-subscribes with `since`,
 * so the server replays what was missed (a `gap` message says when it cannot).
 */
export function subscribeStream(options: SubscribeOptions): StreamSubscription {
  const url = `${options.baseUrl.replace(/^http/, 'ws').replace(/\/$/, '')}/v1/stream`
  const connect =
    options.connect ??
    ((target: string, token: string) => {
      const Ctor = (globalThis as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket
      if (!Ctor) throw new Error('no global WebSocket here (Node 20): pass `connect` built on the ws package')
      return new Ctor(`${target}?access_token=${encodeURIComponent(token)}`)
    })
  const since: Record<string, number> = { ...options.since }
  const queue: StreamServerMessage[] = []
  const waiting: {
    resolve: (r: IteratorResult<StreamServerMessage>) => void
    reject: (e: unknown) => void
  }[] = []
  let failure: unknown
  let done = false
  let socket: WebSocketLike | undefined
  let failures = 0
  let timer: ReturnType<typeof setTimeout> | undefined

  const settle = () => {
    while (waiting.length > 0 && (queue.length > 0 || done || failure !== undefined)) {
      const next = waiting.shift()!
      const message = queue.shift()
      if (message) next.resolve({ value: message, done: false })
      else if (failure !== undefined) next.reject(failure)
      else next.resolve({ value: undefined, done: true })
    }
  }

  const open = () => {
    const ws = connect(url, options.token)
    socket = ws
    ws.addEventListener('open', () => {
      const resume = Object.fromEntries(options.topics.filter((t) => t in since).map((t) => [t, since[t]]))
      ws.send(JSON.stringify({ type: 'subscribe', topics: options.topics, since: resume }))
    })
    ws.addEventListener('message', (event) => {
      let message: StreamServerMessage
      try {
        message = JSON.parse(String(event.data)) as StreamServerMessage
      } catch {
        return
      }
      failures = 0
      if (typeof message.topic === 'string' && typeof message.seq === 'number')
        since[message.topic] = message.seq
      if (message.type === 'heartbeat' || message.type === 'pong') return
      queue.push(message)
      settle()
    })
    ws.addEventListener('error', () => {})
    ws.addEventListener('close', (event) => {
      if (done || socket !== ws) return
      if (FATAL_CLOSE.has(event.code) || ++failures > (options.reconnects ?? 5)) {
        failure = new Error(`stream closed (${event.code}${event.reason ? ` ${event.reason}` : ''})`)
        done = true
        settle()
        return
      }
      const cap = Math.min(30_000, (options.baseDelayMs ?? 250) * 2 ** (failures - 1))
      timer = setTimeout(open, Math.floor(Math.random() * cap))
    })
  }
  open()

  return {
    since,
    close() {
      done = true
      clearTimeout(timer)
      socket?.close(1000, 'client closed')
      settle()
    },
    [Symbol.asyncIterator]() {
      return {
        next: () =>
          new Promise<IteratorResult<StreamServerMessage>>((resolve, reject) => {
            waiting.push({ resolve, reject })
            settle()
          }),
        return: async () => {
          this.close()
          return { value: undefined, done: true }
        },
      }
    },
  }
}
