/**
 * The verifiers' options are checked before any verdict (issue 44): a NaN tolerance or clock made every age
 * comparison false, so a delivery an hour old passed. Both the server's verifier and the shipped client's refuse
 * such options with a RangeError; a valid tolerance still bounds the age exactly.
 */
import { describe, expect, it } from 'vitest'
import { constructEvent, verifyWebhookSignature, WebhookVerificationError } from '../../client/src/index.js'
import { verifyWebhookSignature as verifySignature } from '../../client/src/webhooks.js'
import { signDelivery } from '../../src/domain/webhooks/signing.js'

const NOW = Date.UTC(2026, 10, 23, 10, 0, 0)
const BODY = { id: 'evt_1', event: 'agent.created', ts: '2026-11-23T10:00:00.000Z', agent_id: 'agt_1' }
const SECRET = 's3cret-key'
const HOUR_LATER = NOW + 3_600_000

const BAD_TOLERANCES = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, -0.5]
const BAD_CLOCKS = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]

const verifiers = {
  server: (body: string, options: { toleranceSeconds?: number; now?: number }) =>
    verifySignature(body, [SECRET], options),
  client: (body: string, options: { toleranceSeconds?: number; now?: number }) =>
    verifyWebhookSignature(body, SECRET, options),
  // With the Standard Webhooks headers, so both of its age checks run; a refused delivery is a false verdict.
  'client constructEvent': (body: string, options: { toleranceSeconds?: number; now?: number }) => {
    try {
      return (
        constructEvent(body, signDelivery('dlv_1', BODY, [SECRET], NOW).headers, SECRET, options).id ===
        'evt_1'
      )
    } catch (error) {
      if (error instanceof WebhookVerificationError) return false
      throw error
    }
  },
}

describe.each(Object.entries(verifiers))('the %s verifier', (_name, verify) => {
  const { rawBody } = signDelivery('dlv_1', BODY, [SECRET], NOW)

  it.each(BAD_TOLERANCES)(
    'refuses toleranceSeconds %s with a RangeError (never a verdict)',
    (toleranceSeconds) => {
      expect(() => verify(rawBody, { toleranceSeconds, now: HOUR_LATER })).toThrow(RangeError)
      expect(() => verify(rawBody, { toleranceSeconds, now: NOW })).toThrow(/toleranceSeconds/)
    },
  )

  it.each(BAD_CLOCKS)('refuses now %s with a RangeError', (now) => {
    expect(() => verify(rawBody, { now })).toThrow(/now must be/)
  })

  it('still bounds the age with a valid tolerance: 0 accepts only the same second, 60 refuses an hour', () => {
    expect(verify(rawBody, { toleranceSeconds: 0, now: NOW })).toBe(true)
    expect(verify(rawBody, { toleranceSeconds: 0, now: NOW + 1_000 })).toBe(false)
    expect(verify(rawBody, { toleranceSeconds: 60, now: HOUR_LATER })).toBe(false)
    expect(verify(rawBody, { toleranceSeconds: 3600, now: HOUR_LATER })).toBe(true)
  })
})
