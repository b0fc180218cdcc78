/**
 * Pacing from the deployment's own rate-limit headers, so a key with a small quota (the standard tier: 1,000 an
 * hour with a burst window) completes a run instead of failing checks with 429s. The suite reads whichever header
 * family the deployment sends, as the rate-limit checks read it (./ratewindows.ts: IETF `RateLimit`, one set of
 * headers per window or one for all, the names the deployment declares), and `Retry-After` on a 429. The tokens the rate-limit checks drive into their limit on purpose are never paced.
 */
import type { SuiteConfig } from './config.js'
import { rateWindows } from './ratewindows.js'
import { sleep } from './wait.js'

/**
 * Seconds until the quota that is used up resets, or undefined when a quota is left (or nothing is said): read as
 * the rate-limit checks read the windows (./ratewindows.ts), with the deployment's declared header names if any.
 */
export function exhaustedFor(
  headers: Record<string, string>,
  nowMs = Date.now(),
  declared?: SuiteConfig['rateLimitHeaders'],
): number | undefined {
  const waits = rateWindows(headers, declared, nowMs)
    .filter((w) => w.remaining <= 0)
    .map((w) => w.reset)
  return waits.length > 0 ? Math.max(...waits) : undefined
}

/** Seconds a 429's Retry-After asks for (delta seconds or an HTTP date). */
export function retryAfter(headers: Record<string, string>, nowMs = Date.now()): number | undefined {
  const v = headers['retry-after']
  if (v === undefined) return undefined
  if (/^\d+$/.test(v.trim())) return Number(v)
  const date = Date.parse(v)
  return Number.isNaN(date) ? undefined : Math.max(0, (date - nowMs) / 1000)
}

export class Pacer {
  /** Total time spent waiting, ms (reported at the end of the run). */
  waitedMs = 0
  private readonly notBefore = new Map<string, number>()
  private readonly exempt: Set<string>
  readonly maxWaitMs: number

  private readonly declared: SuiteConfig['rateLimitHeaders']

  constructor(
    config: Pick<SuiteConfig, 'paceMaxWait' | 'rateLimitHeaders'>,
    exemptFingerprints: Iterable<string> = [],
  ) {
    this.exempt = new Set(exemptFingerprints)
    this.maxWaitMs = config.paceMaxWait * 1000
    this.declared = config.rateLimitHeaders
  }

  exemptToken(fingerprint: string): void {
    this.exempt.add(fingerprint)
  }

  paces(fingerprint: string | undefined): fingerprint is string {
    return fingerprint !== undefined && !this.exempt.has(fingerprint)
  }

  /** Waits until the identity's quota has reset, when an earlier answer said it was used up. */
  async before(fingerprint: string | undefined): Promise<void> {
    if (!this.paces(fingerprint)) return
    const until = this.notBefore.get(fingerprint)
    if (until === undefined) return
    this.notBefore.delete(fingerprint)
    const wait = until - Date.now()
    if (wait > 0) await this.wait(wait)
  }

  /** Records what the answer's headers say; true when a 429 should be retried after its Retry-After. */
  after(fingerprint: string | undefined, status: number, headers: Record<string, string>): boolean {
    if (!this.paces(fingerprint)) return false
    const now = Date.now()
    const exhausted = exhaustedFor(headers, now, this.declared)
    const seconds = status === 429 ? (retryAfter(headers, now) ?? exhausted ?? 1) : exhausted
    if (seconds === undefined) return false
    const ms = Math.ceil(seconds * 1000) + 100
    if (ms > this.maxWaitMs) return false
    this.notBefore.set(fingerprint, Date.now() + ms)
    return status === 429
  }

  private async wait(ms: number): Promise<void> {
    this.waitedMs += ms
    await sleep(ms)
  }
}
