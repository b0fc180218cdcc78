import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { slackSignature } from '../../src/domain/destinations/slack-signature.js'
import { createLogger } from '../../src/observability/logger.js'
import { createAgent, registerTool, startRun, status, traceOf, waitForRun } from '../runs/helpers.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { type Receiver, startReceiver } from '../webhooks/receiver.js'

const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5'

interface Block {
  type: string
  block_id?: string
  text?: { text: string }
  elements?: { action_id?: string; value?: string }[]
}
interface Posted {
  text: string
  blocks: Block[]
}

let t: TestServer
let chat: Receiver
let slackApi: Receiver
const logLines: string[] = []
let token: string
let otherToken: string
let destinationId: string
let otherDestinationId: string

beforeAll(async () => {
  t = await startTestServer({
    logger: createLogger({
      level: 'info',
      destination: { write: (line: string) => void logLines.push(line) },
    }),
    config: { webhookPollMs: 20 },
  })
  chat = await startReceiver()
  slackApi = await startReceiver()
  token = (await t.createKey()).token
  otherToken = (await t.createKey()).token
  const created = await t.request('POST', '/v1/destinations', {
    token,
    body: {
      type: 'slack',
      name: 'approvals',
      events: ['run.awaiting_approval'],
      config: { approval_buttons: true },
      secrets: { webhook_url: `${chat.url}/services/T/B/tok`, signing_secret: SIGNING_SECRET },
    },
  })
  expect(created.status, created.text).toBe(201)
  expect(created.body.secrets_set).toEqual(['signing_secret', 'webhook_url'])
  expect(created.text).not.toContain(SIGNING_SECRET)
  destinationId = created.body.destination_id
  const other = await t.request('POST', '/v1/destinations', {
    token: otherToken,
    body: {
      type: 'slack',
      name: 'someone else',
      events: ['run.awaiting_approval'],
      config: { approval_buttons: true },
      secrets: { webhook_url: `${chat.url}/services/T/B/other`, signing_secret: SIGNING_SECRET },
    },
  })
  otherDestinationId = other.body.destination_id
})
afterAll(async () => {
  await t.close()
  await chat.close()
  await slackApi.close()
})

/** A run of a supervised agent, waiting for the approval of step_1, and the Slack message that announced it. */
async function waitingRun(): Promise<{ runId: string; message: Posted; value: string }> {
  const tool = `lookup_${Math.random().toString(36).slice(2, 8)}`
  await registerTool(t, token, { name: tool })
  const agent = await createAgent(t, token, 'supervised', [tool])
  const run = await startRun(t, token, agent)
  const runId = String(run.run_id)
  await waitForRun(t, token, runId, status('awaiting_approval'))
  const deadline = Date.now() + 8_000
  for (;;) {
    const posted = chat.received.map((r) => JSON.parse(r.body) as Posted).find((m) => m.text.includes(runId))
    const value = posted?.blocks.find((b) => b.type === 'actions')?.elements?.[0]?.value
    if (posted && value) return { runId, message: posted, value }
    if (Date.now() > deadline) throw new Error(`no Slack message with buttons for ${runId}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

function interaction(value: string, message: Posted, action = 'agentops_approve'): string {
  const payload = {
    type: 'block_actions',
    user: { id: 'U024BE7LH', username: 'alice', team_id: 'T9TK3CUKW' },
    team: { id: 'T9TK3CUKW', domain: 'example' },
    actions: [{ action_id: action, block_id: 'agentops_approval', value, type: 'button' }],
    response_url: `${slackApi.url}/actions/T9TK3CUKW/1/abc`,
    message,
  }
  return `payload=${encodeURIComponent(JSON.stringify(payload))}`
}

const post = (body: string, opts: { ts?: number; signature?: string; destination?: string } = {}) => {
  const ts = String(opts.ts ?? Math.floor(Date.now() / 1000))
  return t.request('POST', `/integrations/slack/${opts.destination ?? destinationId}/interactions`, {
    rawBody: body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': opts.signature ?? slackSignature(SIGNING_SECRET, ts, body),
    },
    unchecked: true,
  })
}

const refusals = () =>
  logLines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => String(l.msg).startsWith('slack interaction'))

describe('approve from Slack', () => {
  it('a signed Approve click decides the step as the Slack user and replaces the message', async () => {
    const { runId, message, value } = await waitingRun()
    expect(JSON.parse(value)).toEqual({ run_id: runId, step_id: 'step_1' })
    const before = slackApi.received.length
    const res = await post(interaction(value, message))
    expect(res.status).toBe(200)
    expect(res.text).toBe('')
    const run = await waitForRun(t, token, runId, (r) => r.status !== 'awaiting_approval')
    expect(run.status).not.toBe('awaiting_approval')
    const granted = (await traceOf(t, token, runId)).find((f) => f.kind === 'approval.granted')
    expect(granted?.detail).toMatchObject({ decided_by: 'slack:T9TK3CUKW/U024BE7LH' })
    const [update] = await slackApi.waitFor(before + 1).then((r) => r.slice(before))
    const replaced = JSON.parse(update?.body ?? '{}') as Posted & { replace_original: boolean }
    expect(replaced.replace_original).toBe(true)
    expect(replaced.blocks.some((b) => b.type === 'actions')).toBe(false)
    expect(replaced.blocks.at(-1)?.text?.text).toContain('*Approved* by <@U024BE7LH>')
    expect(replaced.blocks[0]).toEqual(message.blocks[0])
  })

  it('a Deny click rejects the step: the run fails, rejected by the Slack user', async () => {
    const { runId, message, value } = await waitingRun()
    expect((await post(interaction(value, message, 'agentops_deny'))).status).toBe(200)
    const run = await waitForRun(t, token, runId, status('failed'))
    expect(JSON.stringify(run)).toContain('rejected by slack:T9TK3CUKW/U024BE7LH')
  })

  it('forged, stale, replayed and unknown-destination requests are 401, change nothing and are logged', async () => {
    const { runId, message, value } = await waitingRun()
    const body = interaction(value, message)
    const now = Math.floor(Date.now() / 1000)
    const forged = await post(body, { signature: slackSignature('not-the-secret', String(now), body) })
    const tampered = await post(body.replace('agentops_approve', 'agentops_deny'), {
      signature: slackSignature(SIGNING_SECRET, String(now), body),
    })
    // Well outside the 5-minute tolerance both ways: a loaded machine lets seconds pass between here and the check,
    // which brought a timestamp of now + 301 back inside it.
    const stale = await post(body, { ts: now - 400 })
    const future = await post(body, { ts: now + 400 })
    const unsigned = await t.request('POST', `/integrations/slack/${destinationId}/interactions`, {
      rawBody: body,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      unchecked: true,
    })
    const unknown = await post(body, { destination: 'dst_nope' })
    for (const res of [forged, tampered, stale, future, unsigned, unknown]) {
      expect(res.status).toBe(401)
      expect(res.body.error.code).toBe('unauthenticated')
      expect(res.text).not.toContain(SIGNING_SECRET)
    }
    expect((await t.request('GET', `/v1/runs/${runId}`, { token })).body.status).toBe('awaiting_approval')
    const ts = now
    const once = await post(body, { ts })
    expect(once.status).toBe(200)
    const replay = await post(body, { ts })
    expect(replay.status).toBe(401)
    const reasons = refusals()
      .filter((l) => l.msg === 'slack interaction refused')
      .map((l) => l.reason)
    expect(reasons).toEqual(
      expect.arrayContaining(['forged', 'stale', 'replayed', 'no slack destination with a signing secret']),
    )
    expect(reasons.filter((r) => r === 'forged')).toHaveLength(3)
    expect(reasons.filter((r) => r === 'stale')).toHaveLength(2)
    expect(logLines.join('\n')).not.toContain(SIGNING_SECRET)
  })

  it("a click about another workspace's run changes nothing, tells only the clicker, and is logged", async () => {
    const { runId, message, value } = await waitingRun()
    const before = slackApi.received.length
    const res = await post(interaction(value, message), { destination: otherDestinationId })
    expect(res.status).toBe(200)
    expect((await t.request('GET', `/v1/runs/${runId}`, { token })).body.status).toBe('awaiting_approval')
    const [told] = await slackApi.waitFor(before + 1).then((r) => r.slice(before))
    expect(JSON.parse(told?.body ?? '{}')).toMatchObject({
      response_type: 'ephemeral',
      replace_original: false,
    })
    expect(
      refusals().some((l) => l.msg === 'slack interaction changed nothing' && l.reason === 'not_found'),
    ).toBe(true)
  })

  it('approval buttons need the signing secret (400), and the secret is never answered', async () => {
    const res = await t.request('POST', '/v1/destinations', {
      token,
      body: {
        type: 'slack',
        name: 'no secret',
        config: { approval_buttons: true },
        secrets: { webhook_url: `${chat.url}/x` },
      },
    })
    expect(res.status).toBe(400)
    expect(res.body.error.detail.fields).toEqual(['secrets.signing_secret'])
    const read = await t.request('GET', `/v1/destinations/${destinationId}`, { token })
    expect(read.text).not.toContain(SIGNING_SECRET)
  })
})
