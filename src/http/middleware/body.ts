import type { IncomingMessage } from 'node:http'
import type { Context, Next } from 'hono'
import { ApiError } from '../../domain/errors.js'
import { tooDeepAt, tooDeepError } from '../../domain/json-depth.js'
import { findInexactNumber, inexactNumberError } from '../../domain/json-numbers.js'
import { findUnstorableText, unstorableTextError } from '../../domain/text.js'
import type { AppEnv } from '../../surface/context.js'
import { nodeRequest, requestHeader } from '../../surface/request-headers.js'
import type { Step } from './series.js'

/** The methods whose requests may carry a body. */
export const WITH_BODY: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH'])

/**
 * Guards request bodies before anything reads them: 415 for non-JSON or a compressed body, 413 over the limit (by
 * Content-Length and while reading, so a lying or chunked upload cannot slip through), 400 for malformed JSON and
 * for text no store can keep (src/domain/text.ts). The text and its parse stay on the request, so the validator, route guards and
 * the idempotency fingerprint read neither the body nor the JSON twice.
 */
export const bodyGuard =
  (maxBytes: number): Step =>
  (c, next) => {
    if (!WITH_BODY.has(c.req.method)) return next()
    const length = requestHeader(c, 'content-length')
    const hasBody =
      (length !== undefined && length !== '0') || requestHeader(c, 'transfer-encoding') !== undefined
    if (!hasBody) return next()
    return guardBody(c, next, maxBytes, length)
  }

async function guardBody(
  c: Context<AppEnv>,
  next: Next,
  maxBytes: number,
  length: string | undefined,
): Promise<void> {
  const type = requestHeader(c, 'content-type') ?? ''
  if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
    throw new ApiError('unsupported_media_type', 'The request body must be application/json', {
      content_type: type || null,
    })
  }
  // JSON between systems is UTF-8 (RFC 8259 §8.1), which is how the body is read: a body declared in another
  // charset is refused, not read as UTF-8 and misunderstood.
  const charset = type.length > 16 ? /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(type)?.[1] : undefined
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new ApiError(
      'unsupported_media_type',
      `The request body must be JSON in UTF-8, not ${charset || 'an empty charset'}`,
      {
        content_type: type,
      },
    )
  }
  // A compressed body is refused, not read as JSON text and misunderstood (RFC 9110 §15.5.16: 415, naming in
  // Accept-Encoding the one coding taken).
  const coding = requestHeader(c, 'content-encoding')
  if (coding !== undefined && !/^\s*identity\s*$/i.test(coding)) {
    throw new ApiError(
      'unsupported_media_type',
      `The request body must be sent uncompressed, not with Content-Encoding: ${coding}`,
      { content_encoding: coding },
      { 'Accept-Encoding': 'identity' },
    )
  }
  // Under @hono/node-server the body is read from Node's request itself, so no Fetch Request and web stream are
  // built for it (bench:http's POST). app.request (tests, in-process callers) has no Node request.
  const incoming = nodeRequest(c)
  if (length !== undefined && Number(length) > maxBytes) {
    if (incoming) lingeringClose(incoming)
    throw tooLarge(maxBytes)
  }
  let bytes: Buffer
  if (incoming && !incoming.readableEnded) {
    // Awaited in place rather than through a .catch: no promise and closure more on every body.
    try {
      bytes = await readIncoming(incoming, maxBytes)
    } catch (err) {
      if (err instanceof ApiError && err.code === 'payload_too_large') lingeringClose(incoming)
      throw err
    }
  } else bytes = await readLimited(c.req.raw, maxBytes)
  const text = decodeUtf8(bytes)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new ApiError('invalid_request', 'The request body is not valid JSON', {
      issues: [{ path: '', message: (err as Error).message }],
      fields: [],
    })
  }
  const deep = tooDeepAt(parsed)
  if (deep !== undefined) throw tooDeepError('body', deep)
  const unstorable = findUnstorableText(parsed)
  if (unstorable) throw unstorableTextError('body', unstorable)
  const inexact = findInexactNumber(text)
  if (inexact) throw inexactNumberError('body', inexact)
  // Downstream readers reuse this one read and this one parse: Hono's json() would parse the cached text again
  // on every call (the validator's, a route guard's), a full ingest batch being about 75 kB of JSON.
  const cache = c.req.bodyCache as Record<string, unknown>
  cache.text = Promise.resolve(text)
  const once = Promise.resolve(parsed)
  c.req.json = <T>() => once as Promise<T>
  await next()
}

/**
 * The rest of an oversized body is never read, so the answer closes the connection (`Connection: close`): a
 * client cannot mistake the unread bytes for its next request, and is told not to reuse the socket.
 */
function tooLarge(maxBytes: number): ApiError {
  return new ApiError(
    'payload_too_large',
    `The request body is larger than ${maxBytes} bytes`,
    { limit_bytes: maxBytes },
    { Connection: 'close' },
  )
}

/** What a lingering close reads and drops at most, and for how long, before it cuts the connection anyway. */
const LINGER_BYTES = 64 * 1024 * 1024
const LINGER_MS = 5_000
/** How long a refused-before-reading upload may go on being sent and dropped while its answer leaves. */
const REFUSED_LINGER_MS = 2_000

/** Requests whose socket already closes lingering (a 413 began it): a second refusal changes nothing. */
const lingering = new WeakSet<IncomingMessage>()

/**
 * An answer given before the request's body was read (401 without a valid key, 429, 404, 415 ...): the connection
 * closes after it instead of Node reading the whole upload to keep the socket alive. At most `maxBytes` (the most a
 * request may carry) is read and dropped meanwhile, for at most two seconds, so a client whose upload was refused
 * still reads its answer before the close, and a 100 MB upload without a key is cut after the first megabyte.
 */
export function closeUnreadBody(c: Context<AppEnv>, maxBytes: number): void {
  const incoming = nodeRequest(c)
  if (!incoming || incoming.readableEnded || lingering.has(incoming)) return
  const length = requestHeader(c, 'content-length')
  const hasBody =
    (length !== undefined && length !== '0') || requestHeader(c, 'transfer-encoding') !== undefined
  if (!hasBody) return
  c.header('Connection', 'close')
  lingeringClose(incoming, maxBytes, REFUSED_LINGER_MS)
}

/**
 * A "lingering close" (as Apache httpd and nginx do): after the 413 with `Connection: close`, the rest of the
 * body is read and dropped until the client has sent it all (bounded in bytes and time), and only then is the
 * socket closed. Closing a socket with unread bytes in its receive buffer makes the kernel send a reset, which
 * can reach the client before it read the 413: a body written in one piece then saw "connection reset" instead
 * of the answer. Node closes a `Connection: close` socket with `socket.destroySoon()` once the answer is written;
 * for this one socket that becomes: send FIN, keep reading, close on the client's FIN or the bound.
 */
function lingeringClose(incoming: IncomingMessage, maxBytes = LINGER_BYTES, maxMs = LINGER_MS): void {
  if (lingering.has(incoming)) return
  lingering.add(incoming)
  const socket = incoming.socket
  // The body's bytes still arrive through the HTTP parser into the request: let them flow and drop them.
  incoming.removeAllListeners('data')
  incoming.resume()
  let started = false
  socket.destroySoon = function lingering(this: typeof socket) {
    // Node may ask twice (the answer's end and the request's); one linger is enough.
    if (started) return
    started = true
    this.end()
    let left = maxBytes
    const cut = () => this.destroy()
    const timer = setTimeout(cut, maxMs)
    timer.unref()
    this.on('data', (chunk: Buffer) => {
      left -= chunk.length
      if (left < 0) cut()
    })
    this.once('end', cut)
    this.once('close', () => clearTimeout(timer))
    this.resume()
    // The HTTP parser stopped reading the handle when the unread body filled the request's buffer, and the stream
    // still counts as reading, so neither resume() nor read(0) starts it again: without this, a body larger than
    // the kernel's socket buffers (16 MiB in one write) stalled here until the bound cut it with a reset (EPIPE).
    const handle = libuvHandle(this)
    if (handle && !handle.reading) {
      handle.reading = true
      handle.readStart()
    }
  }
}

/** The socket's libuv stream, for the one call Node has no public form of (restarting a stopped read). */
interface ReadingHandle {
  reading: boolean
  readStart(): number
}

function libuvHandle(socket: object): ReadingHandle | undefined {
  const handle: unknown = Reflect.get(socket, '_handle')
  if (typeof handle !== 'object' || handle === null) return undefined
  if (!('readStart' in handle) || typeof handle.readStart !== 'function' || !('reading' in handle))
    return undefined
  return handle as ReadingHandle
}

function clientWentAway(): ApiError {
  // Nobody will read the answer, and it is not a server failure: its request log line (a 400) is the record.
  return new ApiError('invalid_request', 'The request body ended before it was complete', {
    issues: [],
    fields: [],
  })
}

function readIncoming(incoming: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let total = 0
    const settle = (finish: () => void) => {
      incoming.off('data', onData)
      incoming.off('end', onEnd)
      incoming.off('error', onError)
      incoming.off('close', onClose)
      finish()
    }
    const onData = (chunk: Buffer) => {
      total += chunk.length
      if (total <= maxBytes) {
        chunks.push(chunk)
        return
      }
      // The rest stays unread; the server drains it after the 413 and closes (Connection: close).
      incoming.pause()
      settle(() => reject(tooLarge(maxBytes)))
    }
    const onEnd = () => settle(() => resolve(Buffer.concat(chunks, total)))
    const onError = () => settle(() => reject(clientWentAway()))
    const onClose = () => {
      if (!incoming.complete) onError()
    }
    if (incoming.destroyed) {
      reject(clientWentAway())
      return
    }
    incoming.on('data', onData)
    incoming.on('end', onEnd)
    incoming.on('error', onError)
    incoming.on('close', onClose)
  })
}

/** Reads a Fetch request's body up to `maxBytes` (413 `payload_too_large` beyond). */
export async function readLimited(req: Request, maxBytes: number): Promise<Buffer> {
  if (!req.body) return Buffer.alloc(0)
  const reader = req.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>
    try {
      chunk = await reader.read()
    } catch {
      throw clientWentAway()
    }
    const { done, value } = chunk
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => {})
      throw tooLarge(maxBytes)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks, total)
}

/** One decoder for every body: a `decode` without `stream` starts afresh each time. */
const UTF8 = new TextDecoder('utf-8', { fatal: true })

function decodeUtf8(bytes: Buffer): string {
  try {
    return UTF8.decode(bytes)
  } catch {
    throw new ApiError('invalid_request', 'The request body is not valid UTF-8', { issues: [], fields: [] })
  }
}
