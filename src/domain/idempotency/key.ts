import { hash } from 'node:crypto'
import { canonicalize } from '../../../client/src/canonical-json.js'
import { ApiError } from '../errors.js'

// Stryker disable next-line ArithmeticOperator: spec §8 "The window is 24 hours"; a conformance run shorter than the window cannot tell it from the 24 s these leave.
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
export const MAX_KEY_LENGTH = 255

/** Response headers worth replaying; per-request ones (request id, rate limits, dates) are fresh each time. */
export const REPLAYED_HEADERS = ['content-type', 'location']

export function validateKey(key: string): void {
  // The pattern's `+` refuses an empty key too.
  if (key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
    throw new ApiError(
      'invalid_idempotency_key',
      `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters without spaces`,
      { header: 'Idempotency-Key', length: key.length },
    )
  }
}

/**
 * What makes two requests "the same": method, path and the canonical form of the JSON body. `parsed` is the body's
 * parse when the caller already has it (the body guard's), so a large body (an ingest batch) is not parsed twice.
 */
export function fingerprint(method: string, path: string, bodyText: string, parsed?: unknown): string {
  // Stryker disable next-line StringLiteral: equivalent, every request without a body gets the same value either way.
  let canonicalBody = ''
  // Stryker disable all: a speed path and its fallback: `parsed` is the body guard's parse of this very text, given for every JSON body a keyed route takes, so either branch makes the same fingerprint.
  if (parsed !== undefined) canonicalBody = canonicalize(parsed)
  else if (bodyText.trim() !== '') {
    try {
      canonicalBody = canonicalize(JSON.parse(bodyText))
    } catch {
      canonicalBody = bodyText
    }
  }
  // Stryker restore all
  // One-shot hashing (no Hash object per keyed request), in hex, crypto.hash's default.
  // Stryker disable next-line MethodExpression: equivalent, fingerprints are only compared with each other, all made the same way.
  return hash('sha256', `${method.toUpperCase()} ${path}\n${canonicalBody}`)
}
