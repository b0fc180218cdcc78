import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { harness } from './helpers.js'
import { type Receiver, startReceiver } from './receiver.js'

describe('webhook outbox across a restart', () => {
  let receiver: Receiver | undefined
  afterEach(async () => {
    await receiver?.close()
  })

  it('finishes a delivery interrupted mid-retry with the same webhook-id, and fans out events logged meanwhile', async () => {
    const url = `sqlite:${join(mkdtempSync(join(tmpdir(), 'agentops-webhooks-')), 'restart.db')}`
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
    const [pending] = await first.webhooks.listDeliveries('ws_a', sub.id, 0, 10)
    expect(pending).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: 500 })
    // Logged just before the crash, never fanned out by this process.
    await first.append('ws_a', 'agent.deleted', { agent_id: 'agt_1' })
    await first.close()

    receiver.fallback = 200
    clock.advance(60_000)
    const second = await harness(url, { random: () => 0.5 }, clock)
    try {
      await second.webhooks.dispatcher.runOnce()
      const log = await second.webhooks.listDeliveries('ws_a', sub.id, 0, 10)
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
      expect(await second.webhooks.listDeliveries('ws_a', sub.id, 0, 10)).toHaveLength(2)
    } finally {
      await second.close()
    }
  })
})
