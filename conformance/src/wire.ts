/**
 * One HTTP exchange on Node's own client (node:http and node:https over kept-alive connections): what the suite's
 * HttpClient sends every request through. It spends much less CPU per request than `fetch` (no web streams, no
 * abort-signal composition), and a run sends thousands. It behaves as the suite's `fetch` did: no redirect is
 * followed, a gzip or deflate body is decoded (the header stays as sent), headers read as one lower-cased entry per
 * name, repeated values joined by ", ".
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib'

export interface WireRequest {
  method: string
  url: string
  /** Lower-cased names. */
  headers: Record<string, string>
  body?: string
  timeoutMs: number
  /** Aborted, it ends the exchange (the run's deadline, an interrupt). */
  signal?: AbortSignal
  /**
   * Called with the body's text as it arrives, before the exchange ends (an event stream read live); only for a
   * body sent without a content-encoding.
   */
  onText?: (text: string) => void
}

export interface WireResponse {
  status: number
  headers: Record<string, string>
  text: string
}

/** The exchange's deadline passed (named as `AbortSignal.timeout`'s error is). */
class WireTimeout extends Error {
  override name = 'TimeoutError'
}

/**
 * How long a connection may sit idle before it is closed, as undici's `fetch` does by default: shorter than the idle
 * timeouts servers use (Node's 5 s), and shortened again by a `Keep-Alive: timeout=N` answer (to N - 1 s), so a
 * request is not sent on a connection the server is closing (a `socket hang up` no POST without a key may retry).
 * Without it Node's agent keeps idle connections until the server closes them, and ignores that hint.
 */
const IDLE_MS = 4000
// Idle connections are unreferenced by the agents: they never keep a finished run's process alive. The timeout
// closes idle connections only: a request that takes longer is left alone. The mutant proxy relays on them too.
export const agents = {
  http: new HttpAgent({ keepAlive: true, timeout: IDLE_MS }),
  https: new HttpsAgent({ keepAlive: true, timeout: IDLE_MS }),
}
const decoder = new TextDecoder()
const WITH_BODY = new Set(['POST', 'PUT', 'PATCH'])

export function exchange(req: WireRequest): Promise<WireResponse> {
  return new Promise((resolve, reject) => {
    const secure = req.url.startsWith('https:')
    const headers: Record<string, string> = { 'accept-encoding': 'gzip, deflate', ...req.headers }
    if (req.body !== undefined) headers['content-length'] ??= String(Buffer.byteLength(req.body))
    else if (WITH_BODY.has(req.method)) headers['content-length'] ??= '0'
    const out = (secure ? httpsRequest : httpRequest)(req.url, {
      method: req.method,
      headers,
      agent: secure ? agents.https : agents.http,
    })
    // The first reason the exchange ended early is the one reported: a destroyed request also fails its answer.
    let ended: Error | undefined
    const end = (err: Error) => {
      ended ??= err
      out.destroy(err)
    }
    const timer = setTimeout(() => end(new WireTimeout(`timed out after ${req.timeoutMs} ms`)), req.timeoutMs)
    const onAbort = () => end(abortError(req.signal))
    if (req.signal?.aborted) onAbort()
    else req.signal?.addEventListener('abort', onAbort, { once: true })
    const done = () => {
      clearTimeout(timer)
      req.signal?.removeEventListener('abort', onAbort)
    }
    const failed = (err: Error) => {
      done()
      reject(ended ?? err)
    }
    out.on('error', failed)
    out.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = []
      const live = req.onText && !res.headers['content-encoding'] ? new TextDecoder() : undefined
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk)
        if (live) req.onText?.(live.decode(chunk, { stream: true }))
      })
      res.on('error', failed)
      res.on('end', () => {
        done()
        try {
          const headers = joinedHeaders(res.rawHeaders)
          const bytes = decoded(Buffer.concat(chunks), headers['content-encoding'])
          resolve({ status: res.statusCode ?? 0, headers, text: decoder.decode(bytes) })
        } catch (err) {
          reject(err as Error)
        }
      })
    })
    out.end(req.body)
  })
}

function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason
  if (reason instanceof Error) return reason
  const err = new Error('This operation was aborted')
  err.name = 'AbortError'
  return err
}

/** Lower-cased names; a header sent more than once reads as its values joined by ", ", in the order sent. */
export function joinedHeaders(raw: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase()
    const value = raw[i + 1] as string
    const seen = out[name]
    out[name] = seen === undefined ? value : `${seen}, ${value}`
  }
  return out
}

/** The body as its content-encoding (gzip, deflate, br; several in the order applied) says to decode it. */
export function decoded(bytes: Buffer, encoding: string | undefined): Buffer {
  if (!encoding || bytes.length === 0) return bytes
  let out = bytes
  for (const coding of encoding
    .toLowerCase()
    .split(',')
    .map((c) => c.trim())
    .reverse()) {
    if (coding === 'gzip' || coding === 'x-gzip') out = gunzipSync(out)
    else if (coding === 'deflate') out = inflateOrRaw(out)
    else if (coding === 'br') out = brotliDecompressSync(out)
    else if (coding !== 'identity' && coding !== '') throw new Error(`unsupported content-encoding ${coding}`)
  }
  return out
}

/** `deflate` as servers send it: zlib-wrapped, or (as some do) raw. */
function inflateOrRaw(bytes: Buffer): Buffer {
  try {
    return inflateSync(bytes)
  } catch {
    return inflateRawSync(bytes)
  }
}
