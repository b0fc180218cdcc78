import { Webhook } from 'standardwebhooks'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { verifyWebhookSignature as verifySignature } from '../../client/src/webhooks.js'
import { ManualClock } from '../../src/domain/clock.js'
import { WebhookService, type WebhookSettings } from '../../src/domain/webhooks/service.js'
import { createOutboundHttp } from '../../src/outbound/http.js'
import { DeliveryRepo } from '../../src/store/repos/deliveries.js'
import { backends } from '../support/backends.js'
import { ANY_LOOPBACK_PORT } from '../support/private-targets.js'
import {
  AWAITING_APPROVAL_FIELDS,
  type Harness,
  harness,
  independentlyVerified,
  TEST_WEBHOOK_SETTINGS,
} from './helpers.js'
import { type Receiver, startReceiver } from './receiver.js'

const SECRET = 'test-signing-secret-1'

/** The harness's clock type reading the wall clock: for the tests that let time pass by itself. */
class WallClock extends ManualClock {
  override now(): number {
    return Date.now()
  }
}

describe.each(backends())('webhook outbox on $name', (backend) => {
  let h: Harness
  let receiver: Receiver

  beforeEach(async () => {
    h = await harness(await backend.freshUrl(), { random: () => 0.999999 })
    receiver = await startReceiver()
  })
  /** Rebuilds the harness on a fresh store with other dispatcher settings. */
  async function reconfigure(settings: Partial<WebhookSettings>): Promise<void> {
    await h.close()
    h = await harness(await backend.freshUrl(), { random: () => 0.999999, ...settings })
  }

  afterEach(async () => {
    await h.close()
    await receiver.close()
  })

  it('delivers every subscribed event, once, with both signature forms valid', async () => {
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_before' }) // before the subscription: not sent
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created', 'run.awaiting_approval'],
      secret: SECRET,
    })
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_1', name: 'a', status: 'idle' })
    await h.append('ws_a', 'tool.registered', { tool_id: 'tool_1' }) // not subscribed
    await h.append('ws_b', 'agent.created', { agent_id: 'agt_other' }) // other workspace
    await h.append('ws_a', 'run.awaiting_approval', {
      run_id: 'run_1',
      agent_id: 'agt_1',
      step_id: 'step_2',
      queue: 'human-review',
      reason: 'tool requires approval',
      payload_preview: { tool: 'wire', input: { amount: 10 } },
    })
    await h.webhooks.dispatcher.runOnce()
    await h.webhooks.dispatcher.runOnce() // a second pass sends nothing new
    expect(receiver.received).toHaveLength(2)

    const [first, second] = receiver.received.map((r) => ({ ...r, json: JSON.parse(r.body) }))
    expect(first?.json).toMatchObject({ event: 'agent.created', agent_id: 'agt_1' })
    expect(Object.keys(second?.json ?? {}).sort()).toEqual([...AWAITING_APPROVAL_FIELDS].sort())
    expect(second?.json).toMatchObject({
      event: 'run.awaiting_approval',
      step_id: 'step_2',
      queue: 'human-review',
    })
    expect(second?.json.id).toMatch(/^evt_/)
    expect(second?.json.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)

    const wh = new Webhook(SECRET, { format: 'raw' })
    for (const r of receiver.received) {
      expect(r.headers['webhook-id']).toMatch(/^dlv_/)
      expect(r.headers['content-type']).toBe('application/json')
      expect(() => wh.verify(r.body, r.headers as Record<string, string>)).not.toThrow()
      expect(independentlyVerified(r.body, SECRET)).toBe(true)
      expect(independentlyVerified(r.body, 'another-secret')).toBe(false)
      expect(verifySignature(r.body, [SECRET], { now: h.clock.now() })).toBe(true)
    }
    const log = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 50)).rows
    expect(log.map((d) => [d.eventKind, d.status, d.attempts, d.lastStatusCode])).toEqual([
      ['agent.created', 'delivered', 1, 200],
      ['run.awaiting_approval', 'delivered', 1, 200],
    ])
    expect(log.map((d) => d.id)).toEqual(receiver.received.map((r) => r.headers['webhook-id']))
  })

  it('offers each event to its own workspace’s subscriptions only, when one pass fans out both workspaces’ events', async () => {
    const events = ['agent.created']
    await h.webhooks.create('ws_a', { url: `${receiver.url}?ws=a`, events, secret: SECRET })
    await h.webhooks.create('ws_b', { url: `${receiver.url}?ws=b`, events, secret: SECRET })
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_a' })
    await h.append('ws_b', 'agent.created', { agent_id: 'agt_b' })
    await h.webhooks.dispatcher.runOnce()
    const got = receiver.received.map((r) => (JSON.parse(r.body) as { agent_id: string }).agent_id).sort()
    expect(got).toEqual(['agt_a', 'agt_b'])
    const log = async (ws: string) =>
      (await h.webhooks.listDeliveries(ws, (await h.webhooks.list(ws, 0, 10)).rows[0]!.id, 0, 10)).rows
    expect((await log('ws_a')).map((d) => d.eventKind)).toEqual(['agent.created'])
    expect((await log('ws_b')).map((d) => d.eventKind)).toEqual(['agent.created'])
  })

  it('retries 500s and time-outs with growing gaps, keeping the webhook-id, then delivers', async () => {
    await reconfigure({ timeoutMs: 200 })
    // Half-way into a second: the attempts fall 999, 2998 and 6997 ms after the first, so each is signed in a
    // second of its own. From a clock on a whole second the first two would share one (a 1-in-1000 failure).
    h.clock.set(Math.ceil(h.clock.now() / 1000) * 1000 + 500)
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created'],
      secret: SECRET,
    })
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
    receiver.script(500, 'hang', 503)
    const gaps: number[] = []
    for (let i = 0; i < 4; i++) {
      await h.webhooks.dispatcher.runOnce()
      const [d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
      if (d?.status !== 'pending') break
      expect(d.nextAttemptAt).not.toBeNull()
      const gap = (d.nextAttemptAt ?? 0) - h.clock.now()
      gaps.push(gap)
      // Not due yet: nothing is sent before the recorded time.
      h.clock.advance(gap - 1)
      const before = receiver.received.length
      await h.webhooks.dispatcher.runOnce()
      expect(receiver.received).toHaveLength(before)
      h.clock.advance(1)
    }
    expect(gaps).toEqual([999, 1999, 3999])
    const [d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    expect(d).toMatchObject({ status: 'delivered', attempts: 4, lastStatusCode: 200, lastError: null })
    expect(receiver.received).toHaveLength(4)
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([d?.id]))
    // Each attempt is signed afresh at its own time.
    expect(new Set(receiver.received.map((r) => r.headers['webhook-timestamp'])).size).toBe(4)
  })

  it('sends a retry when it comes due, not at the next poll', async () => {
    // The poll is ten minutes away: only the retry's own alarm can send the second attempt within the wait.
    await h.close()
    h = await harness(
      await backend.freshUrl(),
      { random: () => 0.999999, pollMs: 600_000, retry: { baseMs: 100, maxAttempts: 3 } },
      new WallClock(),
    )
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created'],
      secret: SECRET,
    })
    receiver.script(500, 503)
    h.webhooks.dispatcher.start()
    try {
      await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
      const got = await receiver.waitFor(3, 10_000)
      // Full jitter at its top: about 100 ms, then 200 ms, after the attempt before.
      expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(90)
      expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(190)
      // The receiver sees the third request before the dispatcher has read its answer and recorded it.
      await vi.waitFor(
        async () => {
          const [d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
          expect(d).toMatchObject({ status: 'delivered', attempts: 3 })
        },
        { timeout: 5_000, interval: 20 },
      )
    } finally {
      await h.webhooks.dispatcher.stop()
    }
  })

  it('records the time-out and refused connections as failed attempts', async () => {
    await reconfigure({ timeoutMs: 150 })
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created'],
      secret: SECRET,
    })
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
    receiver.script('hang')
    await h.webhooks.dispatcher.runOnce()
    let [d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    expect(d).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null })
    expect(d?.lastError).toMatch(/timed out after 150 ms/)
    await receiver.close()
    h.clock.advance(60_000)
    await h.webhooks.dispatcher.runOnce()
    ;[d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    expect(d).toMatchObject({ status: 'pending', attempts: 2, lastStatusCode: null })
    expect(d?.lastError).toMatch(/ECONNREFUSED/)
    receiver = await startReceiver() // for afterEach
  })

  it('marks a delivery failed after the last attempt, and redeliver starts a new round with the same id', async () => {
    await reconfigure({ retry: { baseMs: 1_000, maxAttempts: 3 } })
    receiver.fallback = 500
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created'],
      secret: SECRET,
    })
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
    for (let i = 0; i < 5; i++) {
      await h.webhooks.dispatcher.runOnce()
      h.clock.advance(10_000)
    }
    let [d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    expect(d).toMatchObject({ status: 'failed', attempts: 3, lastStatusCode: 500, nextAttemptAt: null })
    expect(receiver.received).toHaveLength(3)

    receiver.fallback = 204
    const requeued = await h.webhooks.redeliver('ws_a', sub.id, d?.id ?? '')
    expect(requeued).toMatchObject({ status: 'pending', attempts: 0 })
    await h.webhooks.dispatcher.runOnce()
    ;[d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    expect(d).toMatchObject({ status: 'delivered', attempts: 1, lastStatusCode: 204 })
    expect(receiver.received).toHaveLength(4)
    expect(receiver.received[3]?.headers['webhook-id']).toBe(d?.id)
  })

  it('never sends an attempt another worker holds the lease on, and takes over when the lease runs out', async () => {
    const takeovers: string[] = []
    await reconfigure({ leases: { takenOver: (kind, count) => takeovers.push(`${kind}:${count}`) } })
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created'],
      secret: SECRET,
    })
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
    await h.webhooks.dispatcher.fanOut()
    const repo = new DeliveryRepo(h.db)
    const [row] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    // Another replica claimed it and then died mid-attempt.
    const [claimed, ...more] = await repo.claimDue(
      h.clock.now(),
      10,
      [],
      'other-replica',
      h.clock.now() + 30_000,
    )
    expect(more).toEqual([])
    expect(claimed?.row).toMatchObject({ id: row?.id, leaseOwner: 'other-replica' })
    expect(claimed?.claim).toBe('claimed')
    await h.webhooks.dispatcher.runOnce()
    expect(receiver.received).toHaveLength(0)
    // A second claim on the same due row fails while the lease holds.
    expect(await repo.claimDue(h.clock.now(), 10, [], 'third', h.clock.now() + 30_000)).toEqual([])
    expect(takeovers).toEqual([])
    h.clock.advance(30_000)
    await h.webhooks.dispatcher.runOnce()
    expect(receiver.received).toHaveLength(1)
    // The pass that took the lapsed lease over says so once (the server logs it: "replica leases taken over").
    expect(takeovers).toEqual(['deliveries:1'])
    // The dead replica's late outcome cannot overwrite the real one.
    const late = await repo.recordAttempts('other-replica', [
      {
        id: row?.id ?? '',
        attemptsBefore: 0,
        outcome: { kind: 'failed', statusCode: null, error: 'late' },
        now: h.clock.now(),
      },
    ])
    expect(late.size).toBe(0)
    const [d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    expect(d).toMatchObject({ status: 'delivered', attempts: 1 })
  })

  it('holds a subscription’s later events back while another replica’s attempt at an earlier one is in flight', async () => {
    const [sub, other] = [
      await h.webhooks.create('ws_a', { url: receiver.url, events: ['agent.created'], secret: SECRET }),
      await h.webhooks.create('ws_a', { url: receiver.url, events: ['agent.created'], secret: SECRET }),
    ]
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_2' })
    await h.webhooks.dispatcher.fanOut()
    const repo = new DeliveryRepo(h.db)
    const claim = (owner: string) => repo.claimDue(h.clock.now(), 10, [], owner, h.clock.now() + 30_000)
    /** The other replica's attempt at `id` answered 204. */
    const delivered = (id: string | undefined) =>
      repo.recordAttempts('other-replica', [
        {
          id: id ?? '',
          attemptsBefore: 0,
          outcome: { kind: 'delivered', statusCode: 204 },
          now: h.clock.now(),
        },
      ])
    const [first, second] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    const [otherFirst] = (await h.webhooks.listDeliveries('ws_a', other.id, 0, 10)).rows
    // Another replica holds the first delivery of both subscriptions, then finishes the other subscription's.
    const held = await claim('other-replica')
    expect(held.map((c) => c.row.id).sort()).toEqual([first?.id, otherFirst?.id].sort())
    await delivered(otherFirst?.id)
    // This replica may send the other subscription's second event, never the first one's while its first is out.
    expect((await claim('this-replica')).map((c) => c.row.webhookId)).toEqual([other.id])
    await delivered(first?.id)
    expect((await claim('this-replica')).map((c) => c.row.id)).toEqual([second?.id])
  })

  it('keeps one slow receiver from delaying another subscription', async () => {
    const slow = await startReceiver('hang')
    try {
      // The slow receiver never answers within this run; the fast one must not wait for its time-out. Proven by
      // order, not by a clock: all five reach the fast receiver while the slow one's attempt is still in flight
      // (no attempt recorded). A dispatcher that waited for the time-out would time out waitFor first.
      await reconfigure({ timeoutMs: 25_000 })
      const slowSub = await h.webhooks.create('ws_a', {
        url: slow.url,
        events: ['agent.created'],
        secret: SECRET,
      })
      await h.webhooks.create('ws_a', { url: receiver.url, events: ['agent.created'], secret: SECRET })
      h.webhooks.dispatcher.start()
      for (let i = 0; i < 5; i++) await h.append('ws_a', 'agent.created', { agent_id: `agt_${i}` })
      await receiver.waitFor(5, 20_000)
      const slowRows = (await h.webhooks.listDeliveries('ws_a', slowSub.id, 0, 10)).rows
      expect(slowRows.every((row) => row.attempts === 0)).toBe(true)
      // The slow one got exactly one attempt in flight (per-subscription concurrency of one).
      expect(slow.received).toHaveLength(1)
    } finally {
      await h.webhooks.dispatcher.stop()
      await slow.close()
    }
  })

  it('holds a whole pool of attempts in flight without a listener-leak warning', async () => {
    const slow = await startReceiver('hang')
    const warnings: string[] = []
    const onWarning = (w: Error) => warnings.push(w.name)
    process.on('warning', onWarning)
    try {
      // Each attempt in flight listens for the dispatcher's shutdown: 16 at once are the pool, not a leak.
      await reconfigure({ timeoutMs: 25_000, concurrency: 16 })
      for (let i = 0; i < 16; i++)
        await h.webhooks.create('ws_a', { url: slow.url, events: ['agent.created'], secret: SECRET })
      h.webhooks.dispatcher.start()
      await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
      await slow.waitFor(16, 20_000)
      await new Promise((r) => setImmediate(r))
      expect(warnings).not.toContain('MaxListenersExceededWarning')
    } finally {
      process.off('warning', onWarning)
      await h.webhooks.dispatcher.stop()
      await slow.close()
    }
  })

  it('stops at once with an attempt in flight, handing its lease back so another dispatcher retries it now', async () => {
    // An attempt that would run 60 s: a stop that waits for it cannot come in under the 5 s bound below, which is
    // wide enough for a loaded machine's stop (an abort, a pass to finish and one write).
    await reconfigure({ timeoutMs: 60_000 })
    receiver.script('hang')
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created'],
      secret: SECRET,
    })
    h.webhooks.dispatcher.start()
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
    await receiver.waitFor(1)
    const stopping = Date.now()
    await h.webhooks.dispatcher.stop()
    expect(Date.now() - stopping).toBeLessThan(5_000)
    let [d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    expect(d).toMatchObject({ status: 'pending', attempts: 0, leaseOwner: null, leaseUntil: null })
    // A fresh dispatcher over the same store (another replica) takes the row at once, without waiting for a lease.
    const restarted = new WebhookService(h.db, h.repos.webhooks, h.repos.deliveries, h.clock, h.events, {
      ...TEST_WEBHOOK_SETTINGS,
      outbound: createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT }),
    })
    await restarted.dispatcher.runOnce()
    ;[d] = (await h.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    expect(d).toMatchObject({ status: 'delivered', attempts: 1 })
    expect(receiver.received.map((r) => r.headers['webhook-id'])).toEqual([d?.id, d?.id])
  })

  it('signs with every active secret during a rotation overlap, and only the new one after it', async () => {
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created'],
      secret: SECRET,
    })
    const NEW = 'whsec_bmV3LXNlY3JldC1ieXRlcy0xMjM0NTY='
    const rotated = await h.webhooks.rotateSecret('ws_a', sub.id, { secret: NEW, overlap_seconds: 60 })
    expect(rotated.secretRotatedAt).toBe(h.clock.now())
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
    await h.webhooks.dispatcher.runOnce()
    const during = receiver.received[0]
    expect(during).toBeDefined()
    if (!during) return
    expect(JSON.parse(during.body).signature).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/)
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2)
    expect(verifySignature(during.body, [SECRET], { now: h.clock.now() })).toBe(true)
    expect(verifySignature(during.body, [NEW], { now: h.clock.now() })).toBe(true)
    expect(() => new Webhook(NEW).verify(during.body, during.headers as Record<string, string>)).not.toThrow()
    expect(() =>
      new Webhook(SECRET, { format: 'raw' }).verify(during.body, during.headers as Record<string, string>),
    ).not.toThrow()

    h.clock.advance(61_000)
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_2' })
    await h.webhooks.dispatcher.runOnce()
    const after = receiver.received[1]
    expect(after).toBeDefined()
    if (!after) return
    expect(verifySignature(after.body, [SECRET], { now: h.clock.now() })).toBe(false)
    expect(verifySignature(after.body, [NEW], { now: h.clock.now() })).toBe(true)
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1)
  })

  it('keeps only the secrets still signing across rotations: one whose overlap ran out is dropped', async () => {
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created'],
      secret: SECRET,
    })
    const SECOND = 'whsec_c2Vjb25kLXNlY3JldC1ieXRlcy0xMjM0NTY='
    const THIRD = 'whsec_dGhpcmQtc2VjcmV0LWJ5dGVzLTEyMzQ1Njc='
    await h.webhooks.rotateSecret('ws_a', sub.id, { secret: SECOND, overlap_seconds: 60 })
    h.clock.advance(61_000)
    const rotated = await h.webhooks.rotateSecret('ws_a', sub.id, { secret: THIRD, overlap_seconds: 30 })
    expect(rotated.secrets).toEqual([
      { secret: THIRD, expiresAt: null },
      { secret: SECOND, expiresAt: h.clock.now() + 30_000 },
    ])
  })

  it('drops pending deliveries of a deleted subscription and stops fanning out to it', async () => {
    receiver.fallback = 500
    const sub = await h.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created'],
      secret: SECRET,
    })
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
    await h.webhooks.dispatcher.runOnce()
    await h.webhooks.delete('ws_a', sub.id)
    await h.append('ws_a', 'agent.created', { agent_id: 'agt_2' })
    h.clock.advance(3_600_000)
    await h.webhooks.dispatcher.runOnce()
    expect(receiver.received).toHaveLength(1)
    await expect(h.webhooks.get('ws_a', sub.id)).rejects.toMatchObject({ code: 'not_found' })
  })
})
