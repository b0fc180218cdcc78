import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { backoffCeilingMs, RETRY_CAP_MS, retryDelayMs } from '../../src/domain/webhooks/backoff.js'

/** The policy design.md states (8 attempts, 5 s base, 1 h cap). */
const DEFAULT_RETRY_POLICY = { maxAttempts: 8, baseMs: 5_000, capMs: RETRY_CAP_MS }

import { standardWebhooksKey } from '../../client/src/webhook-signatures.js'
import { verifyWebhookSignature as verifySignature } from '../../client/src/webhooks.js'
import { deliveryBody } from '../../src/domain/webhooks/body.js'
import { bodySignature, signDelivery } from '../../src/domain/webhooks/signing.js'
import { independentlyVerified } from './helpers.js'

const NOW = Date.UTC(2026, 10, 23, 10, 0, 0)
const BODY = {
  id: 'evt_1',
  event: 'agent.created',
  ts: '2026-11-23T10:00:00.000Z',
  agent_id: 'agt_1',
  n: 1.5,
}

describe('body signature (spec §5)', () => {
  it('is HMAC-SHA256 over "<t>." + the canonical JSON of the body without signature', () => {
    const sig = bodySignature(BODY, ['s3cret-key'], 1_700_000_000)
    const expected = createHmac('sha256', 's3cret-key')
      .update(
        '1700000000.{"agent_id":"agt_1","event":"agent.created","id":"evt_1","n":1.5,"ts":"2026-11-23T10:00:00.000Z"}',
      )
      .digest('hex')
    expect(sig).toBe(`t=1700000000,v1=${expected}`)
  })

  it('survives re-serialisation: any key order or whitespace verifies', () => {
    const { rawBody } = signDelivery('dlv_1', BODY, ['s3cret-key'], NOW)
    const parsed = JSON.parse(rawBody) as Record<string, unknown>
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(parsed).reverse()), null, 2)
    expect(verifySignature(reordered, ['s3cret-key'], { now: NOW })).toBe(true)
    expect(verifySignature(parsed, ['s3cret-key'], { now: NOW })).toBe(true)
    expect(independentlyVerified(reordered, 's3cret-key')).toBe(true)
  })

  it('rejects tampering, wrong secrets, malformed signatures and stale or future timestamps', () => {
    const { rawBody } = signDelivery('dlv_1', BODY, ['s3cret-key'], NOW)
    const parsed = JSON.parse(rawBody) as Record<string, unknown>
    expect(verifySignature({ ...parsed, agent_id: 'agt_2' }, ['s3cret-key'], { now: NOW })).toBe(false)
    expect(verifySignature(rawBody, ['other-key'], { now: NOW })).toBe(false)
    expect(verifySignature(rawBody, [], { now: NOW })).toBe(false)
    expect(verifySignature({ ...parsed, signature: 'v1=abc' }, ['s3cret-key'], { now: NOW })).toBe(false)
    expect(verifySignature('not json', ['s3cret-key'], { now: NOW })).toBe(false)
    expect(verifySignature(rawBody, ['s3cret-key'], { now: NOW + 300_000 })).toBe(true)
    expect(verifySignature(rawBody, ['s3cret-key'], { now: NOW + 301_000 })).toBe(false)
    expect(verifySignature(rawBody, ['s3cret-key'], { now: NOW - 301_000 })).toBe(false)
    expect(verifySignature(rawBody, ['s3cret-key'], { now: NOW + 3_000_000, toleranceSeconds: 3600 })).toBe(
      true,
    )
  })

  it('accepts any listed secret (rotation) and carries one v1 per secret', () => {
    const { rawBody, headers } = signDelivery('dlv_1', BODY, ['new-secret-1', 'old-secret-1'], NOW)
    expect(verifySignature(rawBody, ['old-secret-1'], { now: NOW })).toBe(true)
    expect(verifySignature(rawBody, ['unrelated', 'new-secret-1'], { now: NOW })).toBe(true)
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2)
  })
})

describe('Standard Webhooks headers', () => {
  it('verify with the standardwebhooks library for whsec_ and plain secrets', () => {
    const whsec = `whsec_${Buffer.from('sixteen-byte-key').toString('base64')}`
    expect(standardWebhooksKey(whsec).toString()).toBe('sixteen-byte-key')
    const now = Date.now()
    for (const [secret, verifier] of [
      [whsec, new Webhook(whsec)],
      ['plain-secret', new Webhook('plain-secret', { format: 'raw' })],
      // The documented wrapping for languages whose library only takes whsec_: base64 the UTF-8 bytes.
      ['plain-secret', new Webhook(`whsec_${Buffer.from('plain-secret').toString('base64')}`)],
    ] as const) {
      const { rawBody, headers } = signDelivery('dlv_abc', BODY, [secret], now)
      expect(headers['webhook-id']).toBe('dlv_abc')
      expect(verifier.verify(rawBody, headers)).toEqual(JSON.parse(rawBody))
      expect(() => verifier.verify(`${rawBody} `, headers)).toThrow()
    }
  })
})

describe('delivery body', () => {
  it('puts id, event and ts beside the event fields and never carries a stale signature', () => {
    const body = deliveryBody({
      id: 'evt_9',
      kind: 'run.paused',
      ts: NOW,
      data: { run_id: 'run_1', id: 'spoof', signature: 'x', queue: 'q' },
    })
    expect(body).toEqual({
      id: 'evt_9',
      event: 'run.paused',
      ts: '2026-11-23T10:00:00.000Z',
      run_id: 'run_1',
      queue: 'q',
    })
  })

  it('gives run.awaiting_approval exactly the spec §6 fields', () => {
    const body = deliveryBody({
      id: 'evt_9',
      kind: 'run.awaiting_approval',
      ts: NOW,
      data: {
        run_id: 'run_1',
        agent_id: 'agt_1',
        task_id: null,
        step_id: 'step_1',
        queue: 'q',
        reason: 'r',
        payload_preview: { tool: 't' },
        internal: 1,
      },
    })
    expect(Object.keys(body).sort()).toEqual(
      ['agent_id', 'event', 'id', 'payload_preview', 'queue', 'reason', 'run_id', 'step_id', 'ts'].sort(),
    )
  })
})

describe('retry backoff', () => {
  it('doubles from the base up to the cap', () => {
    expect([1, 2, 3, 4, 10, 30].map((a) => backoffCeilingMs(a, DEFAULT_RETRY_POLICY))).toEqual([
      5_000, 10_000, 20_000, 40_000, 2_560_000, 3_600_000,
    ])
  })

  it('draws every delay uniformly below the ceiling (full jitter)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (a, r) => {
          const d = retryDelayMs(a, DEFAULT_RETRY_POLICY, () => r)
          expect(d).toBeGreaterThanOrEqual(0)
          expect(d).toBeLessThan(Math.max(1, backoffCeilingMs(a, DEFAULT_RETRY_POLICY)))
        },
      ),
    )
  })
})
