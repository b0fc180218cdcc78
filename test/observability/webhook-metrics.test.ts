/**
 * The webhook metrics through a real server and real receivers: the outbox's depth and the age of its oldest
 * delivery while one waits on a receiver, attempts by outcome, and deliveries given up after their last attempt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'
import { type Receiver, startReceiver } from '../webhooks/receiver.js'
import { type Series, scrape, seriesValue } from './helpers.js'

const SECRET = 'metrics-suite-secret-01'

function webhookFigures(series: Series[]) {
  return {
    depth: seriesValue(series, 'agentops_webhook_outbox_depth'),
    delivered: seriesValue(series, 'agentops_webhook_attempts_total', { outcome: 'delivered' }),
    failed: seriesValue(series, 'agentops_webhook_attempts_total', { outcome: 'failed' }),
    givenUp: seriesValue(series, 'agentops_webhook_deliveries_given_up_total'),
  }
}

describe('webhook metrics', () => {
  let t: TestServer
  const receivers: Receiver[] = []
  beforeAll(async () => {
    // Retries at once and twice at most; an attempt may wait 10 s on a receiver that never answers.
    t = await startTestServer({
      config: { webhookRetryBaseMs: 10, webhookMaxAttempts: 2, webhookPollMs: 20, webhookTimeoutMs: 10_000 },
    })
  })
  afterAll(async () => {
    for (const r of receivers) await r.close()
    await t?.close()
  })

  /** A workspace subscribed to agent.created on a receiver answering `answer`, and one event sent to it. */
  async function oneDelivery(answer: number | 'hang') {
    const receiver = await startReceiver(answer)
    receivers.push(receiver)
    const { token } = await t.createKey()
    const sub = await t.request('POST', '/v1/webhooks', {
      token,
      body: { url: receiver.url, events: ['agent.created'], secret: SECRET },
    })
    expect(sub.status).toBe(201)
    const sent = Date.now()
    const agent = await t.request('POST', '/v1/agents', {
      token,
      body: { name: 'a', behavior: 'autonomous' },
    })
    expect(agent.status).toBe(201)
    return { receiver, token, webhookId: sub.body.webhook_id as string, sent }
  }

  /** Polls the delivery log (bounded) until its one delivery has `status`. */
  async function settled(token: string, webhookId: string, want: string) {
    const deadline = Date.now() + 5_000
    for (;;) {
      const res = await t.request('GET', `/v1/webhooks/${webhookId}/deliveries`, { token })
      const row = res.body.data[0]
      if (row?.status === want) return row
      if (Date.now() > deadline) throw new Error(`delivery never ${want}: ${res.text}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  it('counts attempts by outcome, give-ups, and a waiting delivery in the outbox', async () => {
    const before = (await scrape(t.baseUrl)).series
    expect(webhookFigures(before)).toEqual({ depth: 0, delivered: 0, failed: 0, givenUp: 0 })
    expect(seriesValue(before, 'agentops_webhook_outbox_oldest_age_seconds')).toBe(0)

    // Delivered at the first attempt.
    const ok = await oneDelivery(200)
    expect(await settled(ok.token, ok.webhookId, 'delivered')).toMatchObject({ attempts: 1 })
    expect(webhookFigures((await scrape(t.baseUrl)).series)).toEqual({
      depth: 0,
      delivered: 1,
      failed: 0,
      givenUp: 0,
    })

    // Refused twice (500), then given up.
    const refusing = await oneDelivery(500)
    expect(await settled(refusing.token, refusing.webhookId, 'failed')).toMatchObject({ attempts: 2 })
    expect(refusing.receiver.received).toHaveLength(2)
    expect(webhookFigures((await scrape(t.baseUrl)).series)).toEqual({
      depth: 0,
      delivered: 1,
      failed: 2,
      givenUp: 1,
    })

    // A receiver that never answers: its delivery stays pending while the attempt waits.
    const stuck = await oneDelivery('hang')
    await stuck.receiver.waitFor(1)
    await new Promise((r) => setTimeout(r, 50))
    // Depth and age from the same scrape, the first one after the delivery began to wait.
    const first = (await scrape(t.baseUrl)).series
    expect(webhookFigures(first)).toEqual({ depth: 1, delivered: 1, failed: 2, givenUp: 1 })
    const age = seriesValue(first, 'agentops_webhook_outbox_oldest_age_seconds')
    expect(age).toBeGreaterThanOrEqual(0.05)
    expect(age).toBeLessThanOrEqual((Date.now() - stuck.sent) / 1000)
    // Still waiting: nothing recorded as an attempt yet.
    const [row] = (
      await t.request('GET', `/v1/webhooks/${stuck.webhookId}/deliveries`, { token: stuck.token })
    ).body.data
    expect(row).toMatchObject({ status: 'pending', attempts: 0 })
  })
})
