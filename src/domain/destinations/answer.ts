import type { OutboundAnswer } from '../outbound.js'
import { attemptResult, type SendResult } from '../webhooks/sender.js'

/**
 * A Retry-After value in ms from `now`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined when absent
 * or unreadable.
 */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * What an HTTP destination's answer means: 2xx delivered; anything else retried, after the receiver's Retry-After
 * when a 429 or 503 carries one (Slack, PagerDuty and most sinks say when to come back).
 */
export function answerResult(answer: OutboundAnswer, now: number): SendResult {
  const result = attemptResult(answer)
  if (!result.ok && answer.ok && (answer.status === 429 || answer.status === 503)) {
    const wait = retryAfterMs(answer.headers?.['retry-after'], now)
    if (wait !== undefined) result.retryAfterMs = wait
  }
  return result
}
