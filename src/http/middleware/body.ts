import { createMiddleware } from 'hono/factory'
import { ApiError } from '../../domain/errors.js'
import type { AppEnv } from '../context.js'

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH'])

/**
 * Guards request bodies before anything reads them: 415 for non-JSON, 413 over the limit (by Content-Length and
 * while reading, so a lying or chunked upload cannot slip through), 400 for malformed JSON. The text stays
 * cached on the request, so the validator and idempotency fingerprint read it without a second pass.
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
    try {
      JSON.parse(text)
    } catch (err) {
      throw new ApiError('invalid_request', 'The request body is not valid JSON', {
        issues: [{ path: '', message: (err as Error).message }],
        fields: [],
      })
    }
    // Hono derives json() from a cached text body, so downstream readers reuse this one read.
    ;(c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text)
    await next()
  })

function tooLarge(maxBytes: number): ApiError {
  return new ApiError('payload_too_large', `The request body is larger than ${maxBytes} bytes`, {
    limit_bytes: maxBytes,
  })
}

async function readLimited(req: Request, maxBytes: number): Promise<string> {
  if (!req.body) return ''
  const reader = req.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
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
