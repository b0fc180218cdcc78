import { createMiddleware } from 'hono/factory'
import { ApiError } from '../../domain/errors.js'
import { findUnstorableText, unstorableTextError } from '../../domain/text.js'
import type { AppEnv } from '../context.js'

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH'])

/**
 * Guards request bodies before anything reads them: 415 for non-JSON, 413 over the limit (by Content-Length and
 * while reading, so a lying or chunked upload cannot slip through), 400 for malformed JSON and for text no store
 * can keep (src/domain/text.ts). The text stays cached on the request, so the validator and the idempotency
 * fingerprint read it without a second pass.
 */
export const bodyGuard = (maxBytes: number) =>
  createMiddleware<AppEnv>(async (c, next) => {
    if (!WITH_BODY.has(c.req.method)) return next()
    const length = c.req.header('content-length')
    const hasBody =
      (length !== undefined && length !== '0') || c.req.header('transfer-encoding') !== undefined
    if (!hasBody) return next()
    const type = c.req.header('content-type') ?? ''
    if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
      throw new ApiError('unsupported_media_type', 'The request body must be application/json', {
        content_type: type || null,
      })
    }
    if (length !== undefined && Number(length) > maxBytes) throw tooLarge(maxBytes)
    const text = await readLimited(c.req.raw, maxBytes)
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (err) {
      throw new ApiError('invalid_request', 'The request body is not valid JSON', {
        issues: [{ path: '', message: (err as Error).message }],
        fields: [],
      })
    }
    const unstorable = findUnstorableText(parsed)
    if (unstorable) throw unstorableTextError('body', unstorable)
    // Hono derives json() from a cached text body, so downstream readers reuse this one read.
    const cache = c.req.bodyCache as Record<string, unknown>
    cache.text = Promise.resolve(text)
    await next()
  })

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

async function readLimited(req: Request, maxBytes: number): Promise<string> {
  if (!req.body) return ''
  const reader = req.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>
    try {
      chunk = await reader.read()
    } catch {
      // The client went away mid-body: nobody will read the answer, and it is not a server failure.
      console.info('[http] the client closed the connection before sending the whole request body')
      throw new ApiError('invalid_request', 'The request body ended before it was complete', {
        issues: [],
        fields: [],
      })
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
  const decoder = new TextDecoder('utf-8', { fatal: true })
  try {
    return decoder.decode(Buffer.concat(chunks))
  } catch {
    throw new ApiError('invalid_request', 'The request body is not valid UTF-8', { issues: [], fields: [] })
  }
}
