import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { startTestServer } from '../support/server.js'
import { testTempDir } from '../support/temp.js'
import { harness, independentlyVerified } from './helpers.js'
import { type Receiver, startReceiver } from './receiver.js'

describe('webhook outbox across a restart', () => {
  let receiver: Receiver | undefined
  afterEach(async () => {
    await receiver?.close()
  })

  it('finishes a delivery interrupted mid-retry with the same webhook-id, and fans out events logged meanwhile', async () => {
    const url = `sqlite:${join(testTempDir('webhooks-'), 'restart.db')}`
    const clock = new ManualClock(Date.now())
    receiver = await startReceiver(500)

    const first = await harness(url, { random: () => 0.5 }, clock)
    const sub = await first.webhooks.create('ws_a', {
      url: receiver.url,
      events: ['agent.created', 'agent.deleted'],
      secret: 'restart-secret',
    })
    await first.append('ws_a', 'agent.created', { agent_id: 'agt_1' })
    await first.webhooks.dispatcher.runOnce()
    const [pending] = (await first.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
    expect(pending).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: 500 })
    // Logged just before the crash, never fanned out by this process.
    await first.append('ws_a', 'agent.deleted', { agent_id: 'agt_1' })
    await first.close()

    receiver.fallback = 200
    clock.advance(60_000)
    const second = await harness(url, { random: () => 0.5 }, clock)
    try {
      await second.webhooks.dispatcher.runOnce()
      const log = (await second.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows
      expect(log.map((d) => [d.eventKind, d.status])).toEqual([
        ['agent.created', 'delivered'],
        ['agent.deleted', 'delivered'],
      ])
      expect(log[0]).toMatchObject({ id: pending?.id, attempts: 2, lastStatusCode: 200 })
      const ids = receiver.received.map((r) => r.headers['webhook-id'])
      expect(ids).toHaveLength(3)
      expect(ids.filter((id) => id === pending?.id)).toHaveLength(2)
      // Another pass after the restart creates no duplicate rows and sends nothing again.
      await second.webhooks.dispatcher.runOnce()
      expect(receiver.received).toHaveLength(3)
      expect((await second.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).rows).toHaveLength(2)
    } finally {
      await second.close()
    }
  })

  it('a real server killed mid-retry delivers after a restart on the same SQLite file, same webhook-id', async () => {
    const databaseUrl = `sqlite:${join(testTempDir('webhooks-'), 'server.db')}`
    receiver = await startReceiver(503)
    // A long backoff keeps the first server's delivery waiting for its retry when it goes down.
    const first = await startTestServer({ databaseUrl, config: { webhookRetryBaseMs: 600_000 } })
    const { token } = await first.createKey({ workspace: 'ws-restart' })
    const created = await first.request('POST', '/v1/webhooks', {
      token,
      body: { url: receiver.url, events: ['agent.created'], secret: 'server-restart-secret' },
    })
    expect(created.status).toBe(201)
    const webhookId = created.body.webhook_id as string
    await first.request('POST', '/v1/agents', { token, body: { name: 'a1', behavior: 'autonomous' } })
    await receiver.waitFor(1)
    const deadline = Date.now() + 5_000
    let log = await first.request('GET', `/v1/webhooks/${webhookId}/deliveries`, { token })
    while (log.body.data[0]?.attempts !== 1 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20))
      log = await first.request('GET', `/v1/webhooks/${webhookId}/deliveries`, { token })
    }
    expect(log.body.data[0]).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 503 })
    expect(log.body.data[0].next_attempt_at).not.toBeNull()
    await first.close()

    receiver.fallback = 200
    // The restarted server's clock is past the recorded retry time (still within the 5-minute verify window).
    const due = Date.parse(log.body.data[0].next_attempt_at) + 1
    const clock = new ManualClock(Math.max(due, Date.now()))
    const second = await startTestServer({ databaseUrl, clock, config: { webhookPollMs: 20 } })
    try {
      await receiver.waitFor(2)
      const [firstTry, retry] = receiver.received
      expect(retry?.headers['webhook-id']).toBe(firstTry?.headers['webhook-id'])
      expect(JSON.parse(retry?.body ?? '{}').id).toBe(JSON.parse(firstTry?.body ?? '{}').id)
      expect(independentlyVerified(retry?.body ?? '', 'server-restart-secret')).toBe(true)
      let settled = await second.request('GET', `/v1/webhooks/${webhookId}/deliveries`, { token })
      const until = Date.now() + 5_000
      while (settled.body.data[0]?.status !== 'delivered' && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 20))
        settled = await second.request('GET', `/v1/webhooks/${webhookId}/deliveries`, { token })
      }
      expect(settled.body.data).toHaveLength(1)
      expect(settled.body.data[0]).toMatchObject({
        delivery_id: firstTry?.headers['webhook-id'],
        status: 'delivered',
        attempts: 2,
        last_status_code: 200,
      })
    } finally {
      await second.close()
    }
  })
})
