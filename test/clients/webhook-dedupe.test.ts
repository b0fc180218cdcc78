/**
 * The client's receiver-side dedupe (WebhookDeduplicator): a delivery sent again with the same event id is handled
 * once within the window, a failed handling can be retried, and memory stays bounded.
 */
import { describe, expect, it } from 'vitest'
import { constructEvent, WebhookDeduplicator } from '../../client/src/index.js'
import { bodySignature } from '../../src/domain/webhooks/signing.js'

describe('WebhookDeduplicator', () => {
  it('handles a verified event once however often it is delivered', () => {
    const now = Date.UTC(2026, 10, 27, 12, 0, 0)
    const body = {
      id: 'evt_1',
      event: 'agent.created',
      ts: '2026-11-27T12:00:00Z',
      data: { agent_id: 'agt_1' },
    }
    const raw = JSON.stringify({ ...body, signature: bodySignature(body, ['s3cret'], now / 1000) })
    const dedupe = new WebhookDeduplicator({ now: () => now })
    const handled: string[] = []
    const receive = () => {
      const event = constructEvent(raw, {}, 's3cret', { now })
      if (dedupe.claim(event.id)) handled.push(event.id)
    }
    receive()
    receive() // a retry after a time-out, or a replica killed mid-attempt: the same body id
    receive()
    expect(handled).toEqual(['evt_1'])
  })

  it('forgets an id whose handling failed, so the next delivery is handled', () => {
    const dedupe = new WebhookDeduplicator()
    expect(dedupe.claim('evt_a')).toBe(true)
    dedupe.release('evt_a')
    expect(dedupe.claim('evt_a')).toBe(true)
    expect(dedupe.claim('evt_a')).toBe(false)
  })

  it('remembers an id for the window only', () => {
    let now = 1_000_000
    const dedupe = new WebhookDeduplicator({ windowSeconds: 60, now: () => now })
    expect(dedupe.claim('evt_a')).toBe(true)
    now += 59_999
    expect(dedupe.claim('evt_a')).toBe(false)
    expect(dedupe.claim('evt_b')).toBe(true)
    now += 1
    expect(dedupe.size).toBe(1) // evt_a's window is over, evt_b's is not
    expect(dedupe.claim('evt_a')).toBe(true)
  })

  it('keeps at most maxEntries ids, forgetting the oldest first', () => {
    const dedupe = new WebhookDeduplicator({ maxEntries: 3 })
    for (const id of ['e1', 'e2', 'e3', 'e4']) expect(dedupe.claim(id)).toBe(true)
    expect(dedupe.size).toBe(3)
    expect(dedupe.claim('e4')).toBe(false)
    expect(dedupe.claim('e2')).toBe(false)
    expect(dedupe.claim('e1')).toBe(true) // the oldest went first
  })

  it('refuses a window or a bound that cannot work', () => {
    expect(() => new WebhookDeduplicator({ windowSeconds: 0 })).toThrow(RangeError)
    expect(() => new WebhookDeduplicator({ windowSeconds: Number.NaN })).toThrow(RangeError)
    expect(() => new WebhookDeduplicator({ maxEntries: 0 })).toThrow(RangeError)
    expect(() => new WebhookDeduplicator({ maxEntries: 1.5 })).toThrow(RangeError)
  })
})
