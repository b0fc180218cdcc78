/**
 * The suite's only way to talk HTTP: every request counts against a shared budget (safe on shared deployments),
 * has a timeout, and is reported to observers (the check's recorder and the contract validator).
 */

import { createHash } from 'node:crypto'
import { loopWatch } from './loop-watch.js'
import type { Pacer } from './pacing.js'
import type { Exchange } from './types.js'
import { exchange } from './wire.js'

export function fingerprint(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 12)
}

export class BudgetExceeded extends Error {
  override name = 'BudgetExceeded'
}

/** A hard cap on the number of requests a whole run may send. */
export class RequestBudget {
  used = 0
  private ended = false
  constructor(readonly limit: number) {}

  /** The run is over: a check still going (one that outlived its time limit) sends nothing more. */
  end(): void {
    this.ended = true
  }

  take(): void {
    if (this.ended) throw new BudgetExceeded('the run has ended: no more requests')
    if (this.used >= this.limit) {
      throw new BudgetExceeded(`request budget of ${this.limit} exhausted (raise it with --budget)`)
    }
    this.used++
  }

  get remaining(): number {
    return this.limit - this.used
  }
}

export interface HttpResponse {
  status: number
  headers: Record<string, string>
  /** Parsed JSON when the body is JSON, else the text ('' when empty). */
  body: unknown
  text: string
  exchange: Exchange
}

export interface RequestOptions {
  body?: unknown
  /** Sent byte for byte instead of `body` (malformed JSON, wrong media types). */
  rawBody?: string
  headers?: Record<string, string>
  /** null sends no Authorization header; a string replaces the client's token. */
  token?: string | null
  timeoutMs?: number
  /** false: a 429 comes back as it came, never retried after its Retry-After (for checks that judge whether one came). */
  retry429?: boolean
  /** The body's text as it arrives, for an answer read live (an event stream); the answer still comes whole at its end. */
  onText?: (text: string) => void
}

export type ExchangeObserver = (exchange: Exchange, response: HttpResponse | undefined) => void

export interface HttpClientOptions {
  baseUrl: string
  token?: string
  budget: RequestBudget
  timeoutMs: number
  observers?: ExchangeObserver[]
  /** Waits the deployment's rate-limit headers ask for, and retries a 429 after its Retry-After. */
  pacer?: Pacer
  /** The run's: aborted (--deadline, an interrupt), it ends the requests in flight. */
  signal?: AbortSignal
}

export class HttpClient {
  readonly baseUrl: string
  readonly token: string | undefined
  readonly budget: RequestBudget
  readonly timeoutMs: number
  private readonly observers: ExchangeObserver[]
  private readonly pacer: Pacer | undefined
  private readonly signal: AbortSignal | undefined

  constructor(options: HttpClientOptions) {
    this.signal = options.signal
    this.baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.token = options.token
    this.budget = options.budget
    this.timeoutMs = options.timeoutMs
    this.observers = options.observers ?? []
    this.pacer = options.pacer
  }

  /** The same client (budget, observers) acting as another identity. */
  withToken(token: string | undefined): HttpClient {
    return new HttpClient({
      baseUrl: this.baseUrl,
      token,
      budget: this.budget,
      timeoutMs: this.timeoutMs,
      observers: this.observers,
      ...(this.pacer ? { pacer: this.pacer } : {}),
      ...(this.signal ? { signal: this.signal } : {}),
    })
  }

  addObserver(observer: ExchangeObserver): () => void {
    this.observers.push(observer)
    return () => {
      const i = this.observers.indexOf(observer)
      if (i >= 0) this.observers.splice(i, 1)
    }
  }

  get(path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    return this.request('GET', path, options)
  }

  post(path: string, body?: unknown, options: RequestOptions = {}): Promise<HttpResponse> {
    return this.request('POST', path, body === undefined ? options : { ...options, body })
  }

  patch(path: string, body?: unknown, options: RequestOptions = {}): Promise<HttpResponse> {
    return this.request('PATCH', path, body === undefined ? options : { ...options, body })
  }

  delete(path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    return this.request('DELETE', path, options)
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    const token = options.token === undefined ? this.token : options.token
    const fp = token ? fingerprint(token) : undefined
    // A 429 is retried (twice at most) only when the pacer honours its wait: the request was not processed.
    for (let attempt = 0; ; attempt++) {
      await this.pacer?.before(fp)
      const res = await this.onceOrAgain(method, path, options)
      const retry = this.pacer?.after(fp, res.status, res.headers) ?? false
      if (!retry || options.retry429 === false || attempt >= 2) return res
    }
  }

  /**
   * Sends once more, once, a request whose kept-alive connection the deployment closed before any answer (it closed
   * the idle socket as the request went out: on a starved machine the client's idle timer fires late) when repeating
   * it is harmless: an idempotent method (RFC 9110 §9.2.2 lets clients retry those automatically) or a POST under an
   * Idempotency-Key. Both attempts are recorded like any exchange.
   */
  private async onceOrAgain(method: string, path: string, options: RequestOptions): Promise<HttpResponse> {
    try {
      return await this.once(method, path, options)
    } catch (err) {
      const keyed = Object.keys(options.headers ?? {}).some((h) => h.toLowerCase() === 'idempotency-key')
      if (!(err instanceof TransportError) || !closedBeforeAnswer(err) || !(repeatable(method) || keyed))
        throw err
      return this.once(method, path, options)
    }
  }

  private async once(method: string, path: string, options: RequestOptions): Promise<HttpResponse> {
    this.budget.take()
    // An absolute URL (a declared GraphQL surface elsewhere) is used as it is.
    const url = /^https?:\/\//.test(path) ? path : `${this.baseUrl}${path}`
    const headers: Record<string, string> = { accept: 'application/json', ...lower(options.headers ?? {}) }
    const token = options.token === undefined ? this.token : options.token
    if (token !== null && token !== undefined && headers.authorization === undefined) {
      headers.authorization = `Bearer ${token}`
    }
    let payload: string | undefined
    if (options.rawBody !== undefined) payload = options.rawBody
    else if (options.body !== undefined) payload = JSON.stringify(options.body)
    if (payload !== undefined && headers['content-type'] === undefined)
      headers['content-type'] = 'application/json'
    const record: Exchange = {
      method,
      url,
      requestHeaders: redact(headers),
      ...(token ? { tokenFingerprint: fingerprint(token) } : {}),
      ...(payload !== undefined ? { requestBody: payload } : {}),
      durationMs: 0,
    }
    const started = performance.now()
    try {
      const res = await exchange({
        method,
        url,
        headers,
        ...(payload !== undefined ? { body: payload } : {}),
        timeoutMs: options.timeoutMs ?? this.timeoutMs,
        ...(this.signal ? { signal: this.signal } : {}),
        ...(options.onText ? { onText: options.onText } : {}),
      })
      const text = res.text
      record.status = res.status
      record.responseHeaders = res.headers
      record.responseBody = text
      record.durationMs = Math.round(performance.now() - started)
      const response: HttpResponse = {
        status: res.status,
        headers: record.responseHeaders,
        body: parseBody(text, res.headers['content-type']),
        text,
        exchange: record,
      }
      for (const observe of this.observers) observe(record, response)
      return response
    } catch (err) {
      record.durationMs = Math.round(performance.now() - started)
      const e = err as Error & { cause?: Error }
      record.error =
        e.name === 'TimeoutError'
          ? `timed out after ${options.timeoutMs ?? this.timeoutMs} ms${starved(started)}`
          : `${e.message}${e.cause ? ` (${e.cause.message})` : ''}`
      for (const observe of this.observers) observe(record, undefined)
      throw new TransportError(`${method} ${url}: ${record.error}`, record)
    }
  }
}

/**
 * What a timeout says of this machine: when the suite's own event loop was blocked for a second or more while the
 * request was out, the answer may have come and gone unread, and the deployment is not to blame alone.
 */
function starved(started: number): string {
  const blocked = loopWatch.longestBlockSince(started)
  return blocked >= 1000
    ? ` (the suite's own event loop was blocked for ${blocked} ms meanwhile: this machine is starved, the deployment may not be slow)`
    : ''
}

/** The deployment could not be reached at all (connection refused, DNS, timeout). */
/** Methods a client may repeat after a connection failure (RFC 9110 §9.2.2, idempotent methods). */
export const repeatable = (method: string) => ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE'].includes(method)

/**
 * A connection the peer closed or reset before answering, as Node's client reports it (the suite's, wire.ts) or
 * undici's `fetch` does (the mutation proxy's).
 */
export function closedBeforeAnswer(err: Error & { cause?: unknown }): boolean {
  const cause = err.cause as (Error & { code?: string }) | undefined
  const text = `${err.message} ${cause?.message ?? ''} ${cause?.code ?? ''}`
  return /other side closed|ECONNRESET|socket hang up|UND_ERR_SOCKET/.test(text)
}

export class TransportError extends Error {
  override name = 'TransportError'
  constructor(
    message: string,
    readonly exchange: Exchange,
  ) {
    super(message)
  }
}

function lower(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
}

/** Tokens never reach a report file. */
export function redact(headers: Record<string, string>): Record<string, string> {
  const out = { ...headers }
  if (out.authorization) {
    const [scheme, value] = out.authorization.split(' ', 2)
    out.authorization = value ? `${scheme} ${value.slice(0, 8)}…` : `${scheme}`
  }
  return out
}

/** A body as the suite reads it: its JSON when its content type says JSON and it parses, else its text. */
export function parseBody(text: string, contentType: string | undefined): unknown {
  if (text === '') return ''
  if (contentType?.includes('json')) {
    try {
      return JSON.parse(text)
    } catch {
      return text
    }
  }
  return text
}

/** Narrow an unknown JSON value to an object, for field access in checks. */
export function obj(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {}
}
