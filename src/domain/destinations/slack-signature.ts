import { createHmac, timingSafeEqual } from 'node:crypto'

/** How far a request's timestamp may be from now (Slack's own advice: five minutes). */
export const SLACK_SIGNATURE_TOLERANCE_MS = 5 * 60_000

/** Slack's request signature: `v0=` HMAC-SHA256, keyed with the signing secret, over `v0:{timestamp}:{body}`. */
export function slackSignature(secret: string, timestamp: string, body: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`
}

export type SignatureVerdict = 'valid' | 'stale' | 'forged'

/**
 * Checks `X-Slack-Signature` and `X-Slack-Request-Timestamp` against the raw body
 * (https://api.slack.com/authentication/verifying-requests-from-slack): a timestamp more than five minutes from now
 * is stale, whatever the signature; the signature is compared in constant time.
 */
export function verifySlackSignature(
  secret: string,
  timestamp: string | undefined,
  signature: string | undefined,
  body: string,
  now: number,
): SignatureVerdict {
  if (timestamp === undefined || !/^\d{1,12}$/.test(timestamp) || signature === undefined) return 'forged'
  if (Math.abs(now - Number(timestamp) * 1000) > SLACK_SIGNATURE_TOLERANCE_MS) return 'stale'
  const expected = Buffer.from(slackSignature(secret, timestamp, body), 'utf8')
  const given = Buffer.from(signature, 'utf8')
  // timingSafeEqual needs equal lengths; a length mismatch is compared against itself so the time is the same.
  const same = given.length === expected.length
  return timingSafeEqual(same ? given : expected, expected) && same ? 'valid' : 'forged'
}
