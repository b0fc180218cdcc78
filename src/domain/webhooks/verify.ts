import { createHmac, timingSafeEqual } from 'node:crypto'
import { canonicalize } from '../canonical-json.js'

export interface VerifyOptions {
  /** Oldest (and furthest in the future) timestamp accepted, in seconds; default 300. A finite number >= 0. */
  toleranceSeconds?: number
  /** The verifier's current time in epoch milliseconds; default the system clock. A finite number. */
  now?: number
}

/**
 * The tolerance and clock a verification compares with, refused when they cannot bound anything: a NaN tolerance
 * or clock makes every age comparison false (an hour-old delivery would pass), a negative one refuses everything
 * silently. A RangeError, not a false verdict, because it is the caller's configuration that is wrong.
 */
export function verifyWindow(options: VerifyOptions): { toleranceSeconds: number; nowMs: number } {
  const toleranceSeconds = options.toleranceSeconds ?? 300
  if (typeof toleranceSeconds !== 'number' || !Number.isFinite(toleranceSeconds) || toleranceSeconds < 0)
    throw new RangeError(`toleranceSeconds must be a finite number >= 0, got ${String(toleranceSeconds)}`)
  const nowMs = options.now ?? Date.now()
  if (typeof nowMs !== 'number' || !Number.isFinite(nowMs))
    throw new RangeError(`now must be a finite epoch time in milliseconds, got ${String(nowMs)}`)
  return { toleranceSeconds, nowMs }
}

const SIGNATURE_FORMAT = /^t=(\d{1,15})((?:,v1=[0-9a-f]{64})+)$/

/**
 * Checks the spec §5 `signature` field of a delivery body (the raw JSON text or the parsed object) against
 * every secret the receiver currently trusts; any `v1` matching any secret passes (rotation overlap), and
 * timestamps outside the tolerance fail so a captured delivery cannot be replayed later. Throws a RangeError for a
 * tolerance or clock that is not a finite number (or a negative tolerance).
 */
export function verifySignature(
  body: string | Record<string, unknown>,
  secrets: readonly string[],
  options: VerifyOptions = {},
): boolean {
  const { toleranceSeconds, nowMs } = verifyWindow(options)
  let parsed: unknown
  try {
    parsed = typeof body === 'string' ? JSON.parse(body) : body
  } catch {
    return false
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return false
  const { signature, ...unsigned } = parsed as Record<string, unknown>
  if (typeof signature !== 'string') return false
  const match = SIGNATURE_FORMAT.exec(signature)
  if (!match?.[1] || !match[2]) return false
  const t = Number(match[1])
  if (!(Math.abs(nowMs / 1000 - t) <= toleranceSeconds)) return false
  let canonical: string
  try {
    canonical = canonicalize(unsigned)
  } catch {
    return false
  }
  const candidates = match[2]
    .split(',v1=')
    .filter((h) => h !== '')
    .map((h) => Buffer.from(h, 'hex'))
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(`${t}.${canonical}`, 'utf8').digest()
    if (candidates.some((c) => c.length === expected.length && timingSafeEqual(c, expected))) return true
  }
  return false
}
