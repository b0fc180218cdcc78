/** Real domain events (agents, tools, runs, approvals) reach a subscriber, in the contract's shapes, signed. */
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyWebhookSignature as verifySignature } from '../../client/src/webhooks.js'
import { EVENT_KINDS } from '../../src/domain/webhooks/body.js'
import { createAgent, registerTool, startRun } from '../runs/helpers.js'
import { assertMatchesSchema } from '../support/openapi-validator.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { AWAITING_APPROVAL_FIELDS, independentlyVerified } from './helpers.js'
import { type Receiver, startReceiver } from './receiver.js'

const SECRET = 'whsec_ZXZlbnRzLXN1aXRlLXNlY3JldC1ieXRlcw=='

let t: TestServer
let receiver: Receiver
let token: string

beforeAll(async () => {
  t = await startTestServer({ config: { webhookPollMs: 20, webhookRetryBaseMs: 20 } })
  receiver = await startReceiver()
  token = (await t.createKey()).token
})
afterAll(async () => {
  await t.close()
  await receiver.close()
})

function schemaFor(kind: string): string {
  if (kind === 'run.awaiting_approval') return 'RunAwaitingApprovalEvent'
  if (kind === 'policy.denied') return 'PolicyDeniedEvent'
  if (kind.startsWith('run.')) return 'RunLifecycleEvent'
  return 'ResourceEvent'
}

type Body = Record<string, unknown> & { event: string; id: string }

async function bodiesUntil(kinds: string[]): Promise<Body[]> {
  const deadline = Date.now() + 8_000
  for (;;) {
    const bodies = receiver.received.map((r) => JSON.parse(r.body) as Body)
    const seen = new Set(bodies.map((b) => b.event))
    if (kinds.every((k) => seen.has(k))) return bodies
    if (Date.now() > deadline)
      throw new Error(`still missing ${kinds.filter((k) => !seen.has(k)).join(', ')}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('event deliveries from a working server', () => {
  it('delivers agent, tool, run and approval events, each valid against its contract schema and signed', async () => {
    const sub = await t.request('POST', '/v1/webhooks', {
      token,
      body: { url: receiver.url, events: [...EVENT_KINDS], secret: SECRET },
    })
    expect(sub.status).toBe(201)

    await registerTool(t, token, { name: 'lookup' })
    const agentId = await createAgent(t, token, 'supervised', ['lookup'])
    const run = await startRun(t, token, agentId, { inputs: { period: '2026-Q4' } })
    const bodies = await bodiesUntil(['run.awaiting_approval'])
    const awaiting = bodies.find((b) => b.event === 'run.awaiting_approval')
    expect(Object.keys(awaiting ?? {}).sort()).toEqual([...AWAITING_APPROVAL_FIELDS].sort())
    expect(awaiting).toMatchObject({ run_id: run.run_id, agent_id: agentId, step_id: 'step_1' })
    expect(awaiting?.payload_preview).toMatchObject({ tool: 'lookup' })

    const approved = await t.request('POST', `/v1/runs/${run.run_id}/steps/step_1/approval`, {
      token,
      body: { decision: 'approve' },
    })
    expect(approved.status, approved.text).toBe(200)
    await bodiesUntil(['run.succeeded'])
    const del = await t.request('DELETE', `/v1/agents/${agentId}`, { token })
    expect(del.status, del.text).toBeLessThan(300)

    const all = await bodiesUntil([
      'tool.registered',
      'agent.created',
      'run.started',
      'run.awaiting_approval',
      'run.resumed',
      'run.succeeded',
      'agent.deleted',
    ])
    const wh = new Webhook(SECRET)
    for (const [i, body] of all.entries()) {
      assertMatchesSchema(schemaFor(body.event), body)
      const got = receiver.received[i]
      expect(got).toBeDefined()
      if (!got) continue
      expect(wh.verify(got.body, got.headers as Record<string, string>)).toEqual(body)
      expect(independentlyVerified(got.body, SECRET)).toBe(true)
      expect(verifySignature(got.body, [SECRET])).toBe(true)
    }
    // Each event arrives once per subscription, each under its own delivery id.
    const ids = receiver.received.map((r) => r.headers['webhook-id'])
    expect(new Set(ids).size).toBe(ids.length)
    expect(new Set(all.map((b) => b.id)).size).toBe(all.length)
  })
})
