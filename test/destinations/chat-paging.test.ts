import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ApiError } from '../../src/domain/errors.js'
import type { EventKind } from '../../src/domain/webhooks/body.js'
import { createDestinationTransports } from '../../src/outbound/destinations/index.js'
import { createOutboundHttp } from '../../src/outbound/http.js'
import { ANY_LOOPBACK_PORT } from '../support/private-targets.js'
import { type Receiver, startReceiver } from '../webhooks/receiver.js'
import { type DestinationHarness, destinationHarness } from './helpers.js'
import { type PagerDutyReceiver, startPagerDutyReceiver } from './pagerduty-receiver.js'

const WS = 'ws_chat'
const PUBLIC_URL = 'https://ops.example.com/agentops'
const ROUTING_KEY = 'R0UT1NGKEY0123456789abcdefABCDEF'
const APPROVAL = {
  run_id: 'run_7',
  agent_id: 'agt_pay',
  step_id: 'step_2',
  queue: 'finance',
  reason: 'Amount above the autonomous limit',
  payload_preview: { tool: 'wire_transfer', input: '{"amount":25000,"to":"<ACME & Co>"}', truncated: false },
}
const FAILED = {
  run_id: 'run_8',
  agent_id: 'agt_pay',
  task_id: null,
  status: 'failed',
  outcome: { status: 'failed', results: [], error: { code: 'tool_error', message: 'upstream 502' } },
}

interface Block {
  type: string
  text?: { type: string; text: string }
  fields?: { text: string }[]
  elements?: { type: string; action_id?: string; value?: string; style?: string; text?: unknown }[]
}
interface SlackBody {
  text: string
  blocks: Block[]
  username?: string
}

let h: DestinationHarness
let receiver: Receiver
let pager: PagerDutyReceiver

beforeEach(async () => {
  const outbound = createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT })
  h = await destinationHarness('sqlite::memory:', {
    transports: createDestinationTransports(outbound, { publicUrl: PUBLIC_URL }),
    random: () => 0.5,
  })
  receiver = await startReceiver()
  pager = await startPagerDutyReceiver()
})
afterEach(async () => {
  await h.close()
  await receiver.close()
  await pager.close()
})

const slackBodies = () => receiver.received.map((r) => JSON.parse(r.body) as SlackBody)
const allText = (b: SlackBody) =>
  b.blocks
    .map((x) =>
      [x.text?.text, ...(x.fields ?? []).map((f) => f.text), JSON.stringify(x.elements ?? [])].join('\n'),
    )
    .join('\n')

describe('slack destinations', () => {
  const slack = (config: Record<string, unknown> = {}, events?: EventKind[]) =>
    h.destinations.create(WS, {
      type: 'slack',
      name: 'on-call channel',
      ...(events ? { events } : {}),
      config,
      secrets: { webhook_url: `${receiver.url}/services/T0/B0/xoxsecrettoken` },
    })

  it('posts an approval as Block Kit: what happened, agent and run linked, the pending action', async () => {
    const d = await slack({ username: 'agentops' })
    expect(d.events).toEqual(['run.failed', 'policy.denied', 'run.awaiting_approval'])
    await h.append(WS, 'run.awaiting_approval', APPROVAL)
    await h.destinations.dispatcher.runOnce()
    const [body] = slackBodies()
    if (!body) throw new Error('nothing posted')
    expect(receiver.received[0]?.headers['content-type']).toBe('application/json')
    expect(body.username).toBe('agentops')
    expect(body.text).toContain('Approval needed')
    expect(body.text).toContain('run_7')
    expect(body.blocks[0]).toMatchObject({ type: 'header', text: { type: 'plain_text' } })
    expect(body.blocks[0]?.text?.text).toContain('Approval needed')
    const text = allText(body)
    expect(text).toContain('agt_pay')
    expect(text).toContain(`<${PUBLIC_URL}/v1/runs/run_7|run_7>`)
    expect(text).toContain('finance')
    expect(text).toContain('`wire_transfer`')
    // Slack's control characters in event text are escaped, so nothing in an event can forge a link or mention.
    expect(text).toContain('&lt;ACME &amp; Co&gt;')
    expect(body.blocks.at(-1)?.type).toBe('context')
    const [row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ status: 'delivered', lastStatusCode: 200 })
    expect(h.heard).toEqual(['slack:delivered'])
  })

  it('says what failed and what a policy stopped', async () => {
    await slack({}, ['run.failed', 'policy.denied', 'run.awaiting_approval'])
    await h.append(WS, 'run.failed', FAILED)
    await h.append(WS, 'policy.denied', {
      run_id: 'run_9',
      agent_id: 'agt_pay',
      task_id: null,
      step_id: 'step_1',
      tool: 'wire_transfer',
      tool_id: 'tool_1',
      detail: {
        envelope: 'spend',
        violation: 'amount_over_limit',
        observed: 900,
        limit: 500,
        escalation_queue: null,
      },
    })
    await h.append(WS, 'run.awaiting_approval', APPROVAL)
    await h.append(WS, 'run.started', FAILED) // not listed
    await h.destinations.dispatcher.runOnce()
    const bodies = slackBodies()
    expect(bodies.map((b) => b.blocks[0]?.text?.text)).toEqual([
      ':x: Run failed',
      ':no_entry: Policy denied a step',
      ':raised_hand: Approval needed',
    ])
    expect(allText(bodies[0] as SlackBody)).toContain('tool_error: upstream 502')
    expect(allText(bodies[1] as SlackBody)).toContain('amount_over_limit')
    expect(allText(bodies[1] as SlackBody)).toContain('900 / 500')
    expect(bodies[2]?.blocks.some((b) => b.type === 'actions')).toBe(false)
  })

  it("honours a 429's Retry-After, and no error quotes the webhook URL's token", async () => {
    const d = await slack()
    receiver.answerHeaders = { 'retry-after': '45' }
    receiver.script(429)
    await h.append(WS, 'run.failed', FAILED)
    await h.destinations.dispatcher.runOnce()
    let [row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: 429 })
    expect((row?.nextAttemptAt ?? 0) - h.clock.now()).toBe(45_000)
    receiver.answerHeaders = {}
    receiver.script(404)
    h.clock.advance(45_000)
    await h.destinations.dispatcher.runOnce()
    ;[row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ status: 'pending', attempts: 2, lastStatusCode: 404 })
    expect(row?.lastError).toContain('404')
    await receiver.close()
    h.clock.advance(3_600_000)
    await h.destinations.dispatcher.runOnce()
    ;[row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ attempts: 3, lastStatusCode: null })
    for (const r of [row]) expect(JSON.stringify(r)).not.toContain('xoxsecrettoken')
    const test = await h.destinations.test(WS, d.id)
    expect(test.ok).toBe(false)
    expect(JSON.stringify(test)).not.toContain('xoxsecrettoken')
  })

  it('sends a test message marked as a test', async () => {
    const d = await slack()
    const result = await h.destinations.test(WS, d.id, 'run.awaiting_approval')
    expect(result).toMatchObject({ ok: true, statusCode: 200, event: 'run.awaiting_approval' })
    expect(slackBodies()[0]?.blocks[0]?.text?.text).toBe(':raised_hand: Approval needed (test)')
  })
})

describe('pagerduty destinations', () => {
  const pagerduty = (extra: Record<string, unknown> = {}) =>
    h.destinations.create(WS, {
      type: 'pagerduty',
      name: 'on-call',
      config: { url: pager.url },
      secrets: { routing_key: ROUTING_KEY },
      ...extra,
    })

  it('triggers for the listed kinds with one dedup_key per run, and resolves when the run gets past them', async () => {
    const d = await pagerduty()
    expect(d.events).toEqual(['run.failed', 'policy.denied', 'run.awaiting_approval'])
    expect(d.config).toEqual({ url: pager.url })
    await h.append(WS, 'run.awaiting_approval', APPROVAL)
    await h.append(WS, 'run.started', {
      run_id: 'run_7',
      agent_id: 'agt_pay',
      task_id: null,
      status: 'running',
    })
    await h.append(WS, 'run.resumed', { ...APPROVAL, status: 'running', reason: 'approved' })
    await h.append(WS, 'run.failed', FAILED)
    await h.append(WS, 'run.resumed', {
      run_id: 'run_8',
      agent_id: 'agt_pay',
      status: 'running',
      reason: 'resumed',
    })
    await h.append(WS, 'run.succeeded', { ...FAILED, status: 'succeeded', outcome: null })
    await h.append(WS, 'agent.created', { agent_id: 'agt_pay', name: 'payer', status: 'active' })
    await h.destinations.dispatcher.runOnce()
    expect(pager.refused).toEqual([])
    expect(pager.events.map((e) => [e.event_action, e.dedup_key])).toEqual([
      ['trigger', `agentops:${WS}:run_7`],
      ['resolve', `agentops:${WS}:run_7`],
      ['trigger', `agentops:${WS}:run_8`],
      ['resolve', `agentops:${WS}:run_8`],
    ])
    const [approval, , failed] = pager.events
    expect(approval?.payload).toMatchObject({
      severity: 'warning',
      source: `agentops:${WS}`,
      component: 'agt_pay',
      group: WS,
      class: 'run.awaiting_approval',
      custom_details: {
        run_id: 'run_7',
        step_id: 'step_2',
        queue: 'finance',
        event: 'run.awaiting_approval',
      },
    })
    expect(approval?.payload?.summary).toContain('Approval needed: Step step_2 of run run_7')
    expect(approval?.links).toEqual([{ href: `${PUBLIC_URL}/v1/runs/run_7`, text: 'Run run_7' }])
    expect(failed?.payload).toMatchObject({ severity: 'error', class: 'run.failed' })
    expect(failed?.payload?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/)
    const rows = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(rows.map((r) => [r.eventKind, r.status, r.lastStatusCode])).toEqual([
      ['run.awaiting_approval', 'delivered', 202],
      ['run.resumed', 'delivered', 202],
      ['run.failed', 'delivered', 202],
      ['run.succeeded', 'delivered', 202],
    ])
  })

  it('a rejected approval (run.failed while failures are not paged) resolves; the agent filter holds', async () => {
    await pagerduty({
      events: ['run.awaiting_approval'],
      agent_ids: ['agt_pay'],
      config: { url: pager.url, severity: 'critical', component: 'payments' },
    })
    await h.append(WS, 'run.awaiting_approval', APPROVAL)
    await h.append(WS, 'run.awaiting_approval', { ...APPROVAL, run_id: 'run_x', agent_id: 'agt_other' })
    await h.append(WS, 'run.failed', { ...FAILED, run_id: 'run_7' })
    await h.destinations.dispatcher.runOnce()
    expect(pager.events.map((e) => [e.event_action, e.dedup_key])).toEqual([
      ['trigger', `agentops:${WS}:run_7`],
      ['resolve', `agentops:${WS}:run_7`],
    ])
    expect(pager.events[0]?.payload).toMatchObject({ severity: 'critical', component: 'payments' })
  })

  it("honours a 429's Retry-After", async () => {
    const d = await pagerduty()
    pager.retryAfter = '90'
    pager.script(429)
    await h.append(WS, 'run.failed', FAILED)
    await h.destinations.dispatcher.runOnce()
    const [row] = (await h.destinations.listDeliveries(WS, d.id, 0, 10)).rows
    expect(row).toMatchObject({ status: 'pending', lastStatusCode: 429 })
    expect((row?.nextAttemptAt ?? 0) - h.clock.now()).toBe(90_000)
    h.clock.advance(90_000)
    await h.destinations.dispatcher.runOnce()
    expect(pager.events).toHaveLength(1)
  })
})

describe('chat and paging settings', () => {
  const refusal = async (input: Record<string, unknown>) => {
    try {
      await h.destinations.create(WS, {
        type: 'pagerduty',
        name: 'n',
        secrets: { routing_key: ROUTING_KEY },
        ...input,
      })
    } catch (err) {
      if (err instanceof ApiError) return { code: err.code, message: err.message, detail: err.detail }
      throw err
    }
    throw new Error('accepted')
  }

  it('refuses what cannot work with 400 invalid_request naming the field, never echoing a secret', async () => {
    expect(await refusal({ secrets: {} })).toMatchObject({
      code: 'invalid_request',
      detail: { fields: ['secrets.routing_key'] },
    })
    const short = await refusal({ secrets: { routing_key: 'not-a-key-but-secret' } })
    expect(short.detail.fields).toEqual(['secrets.routing_key'])
    expect(JSON.stringify(short)).not.toContain('not-a-key-but-secret')
    expect(await refusal({ config: { severity: 'apocalyptic' } })).toMatchObject({
      detail: { fields: ['config.severity'] },
    })
    expect(await refusal({ config: { url: 'events.pagerduty.com/v2' } })).toMatchObject({
      detail: { fields: ['config.url'] },
    })
    expect(await refusal({ type: 'slack', secrets: {} })).toMatchObject({
      detail: { fields: ['secrets.webhook_url'] },
    })
    const bad = await refusal({
      type: 'slack',
      secrets: { webhook_url: 'hooks.slack.com/services/T/B/tok3n' },
    })
    expect(bad.detail.fields).toEqual(['secrets.webhook_url'])
    expect(JSON.stringify(bad)).not.toContain('tok3n')
  })

  it('refuses a Slack webhook URL at a private address unless listed', async () => {
    const guarded = await destinationHarness('sqlite::memory:', { outbound: createOutboundHttp() })
    try {
      await expect(
        guarded.destinations.create(WS, {
          type: 'slack',
          name: 'n',
          secrets: { webhook_url: 'http://10.0.0.8/hook' },
        }),
      ).rejects.toMatchObject({ code: 'invalid_request', detail: { fields: ['secrets.webhook_url'] } })
    } finally {
      await guarded.close()
    }
  })
})
