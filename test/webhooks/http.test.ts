import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyWebhookSignature as verifySignature } from '../../client/src/webhooks.js'
import { NO_TARGETS } from '../support/private-targets.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { independentlyVerified } from './helpers.js'
import { type Receiver, startReceiver } from './receiver.js'

const SECRET = 'http-suite-secret-0001'

let t: TestServer
let receiver: Receiver
let token: string
let otherToken: string

beforeAll(async () => {
  t = await startTestServer({
    config: { webhookRetryBaseMs: 40, webhookTimeoutMs: 1_000, webhookPollMs: 20 },
  })
  receiver = await startReceiver()
  token = (await t.createKey()).token
  otherToken = (await t.createKey()).token
})
afterAll(async () => {
  await t.close()
  await receiver.close()
})

async function subscribe(events: string[], url = receiver.url, key = token) {
  const res = await t.request('POST', '/v1/webhooks', { token: key, body: { url, events, secret: SECRET } })
  expect(res.status).toBe(201)
  return res.body as { webhook_id: string }
}

/** Polls the delivery log (bounded) until `done` holds. */
async function deliveriesUntil(
  key: string,
  webhookId: string,
  done: (rows: { status: string; attempts: number }[]) => boolean,
) {
  // Bounded well inside the 30 s test time-out: a loaded machine's retries may need more than a few seconds.
  const deadline = Date.now() + 15_000
  for (;;) {
    const res = await t.request('GET', `/v1/webhooks/${webhookId}/deliveries`, { token: key })
    expect(res.status).toBe(200)
    if (done(res.body.data)) return res.body.data
    if (Date.now() > deadline) throw new Error(`delivery log never settled: ${res.text}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('webhook subscriptions over HTTP', () => {
  it('creates a subscription (201) without ever returning the secret', async () => {
    const res = await t.request('POST', '/v1/webhooks', {
      token,
      body: { url: receiver.url, events: ['run.awaiting_approval', 'agent.created'], secret: SECRET },
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      url: receiver.url,
      events: ['run.awaiting_approval', 'agent.created'],
      status: 'active',
      secret_rotated_at: null,
    })
    expect(res.body.webhook_id).toMatch(/^whk_/)
    expect(res.text).not.toContain(SECRET)
    const got = await t.request('GET', `/v1/webhooks/${res.body.webhook_id}`, { token })
    expect(got.status).toBe(200)
    expect(got.body).toEqual(res.body)
    expect(got.text).not.toContain(SECRET)
  })

  it.each([
    ['a non-http scheme', { url: 'ftp://example.com/x', events: ['agent.created'], secret: SECRET }],
    [
      'credentials in the URL',
      { url: 'https://u:p@example.com/x', events: ['agent.created'], secret: SECRET },
    ],
    ['an unknown event kind', { url: 'https://example.com/x', events: ['run.exploded'], secret: SECRET }],
    ['no event kinds', { url: 'https://example.com/x', events: [], secret: SECRET }],
    ['a missing secret', { url: 'https://example.com/x', events: ['agent.created'] }],
    ['a short secret', { url: 'https://example.com/x', events: ['agent.created'], secret: 'short' }],
    [
      'a bad whsec_ secret',
      { url: 'https://example.com/x', events: ['agent.created'], secret: 'whsec_!!!!!!' },
    ],
    ['an extra field', { url: 'https://example.com/x', events: ['agent.created'], secret: SECRET, x: 1 }],
    ['a non-URL', { url: 'not a url', events: ['agent.created'], secret: SECRET }],
  ])('refuses %s with 400 invalid_request', async (_name, body) => {
    const res = await t.request('POST', '/v1/webhooks', { token, body })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('invalid_request')
    expect(res.text).not.toContain(SECRET)
  })

  it('names a repeated event kind as such, not as an unexplained invalid input', async () => {
    const res = await t.request('POST', '/v1/webhooks', {
      token,
      body: { url: receiver.url, events: ['agent.created', 'agent.created'], secret: SECRET },
    })
    expect([res.status, res.body.error.message, res.body.error.detail.fields]).toEqual([
      400,
      'The request body is invalid: events: must not list the same item twice',
      ['events'],
    ])
  })

  it('checks webhooks:read and webhooks:write scopes', async () => {
    const reader = (await t.createKey({ scopes: ['webhooks:read'] })).token
    const denied = await t.request('POST', '/v1/webhooks', {
      token: reader,
      body: { url: receiver.url, events: ['agent.created'], secret: SECRET },
    })
    expect(denied.status).toBe(403)
    expect(denied.body.error).toMatchObject({ code: 'policy_denied', detail: { limit: ['webhooks:write'] } })
    expect((await t.request('GET', '/v1/webhooks', { token: reader })).status).toBe(200)
    const none = (await t.createKey({ scopes: ['agents:read'] })).token
    expect((await t.request('GET', '/v1/webhooks', { token: none })).status).toBe(403)
  })

  it('answers another workspace exactly like a missing subscription', async () => {
    const { webhook_id } = await subscribe(['agent.created'])
    const missing = await t.request('GET', '/v1/webhooks/whk_00000000000000000000000000', { token })
    const foreign = await t.request('GET', `/v1/webhooks/${webhook_id}`, { token: otherToken })
    expect(foreign.status).toBe(404)
    expect(foreign.body.error.code).toBe(missing.body.error.code)
    expect(foreign.body.error.message).toBe(missing.body.error.message)
    for (const [method, path, body] of [
      ['DELETE', `/v1/webhooks/${webhook_id}`, undefined],
      ['GET', `/v1/webhooks/${webhook_id}/deliveries`, undefined],
      ['POST', `/v1/webhooks/${webhook_id}/rotate-secret`, { secret: 'another-secret-1' }],
      ['POST', `/v1/webhooks/${webhook_id}/deliveries/dlv_00000000000000000000000000/redeliver`, undefined],
    ] as const) {
      const res = await t.request(method, path, { token: otherToken, body })
      expect(res.status, `${method} ${path}`).toBe(404)
    }
    const list = await t.request('GET', '/v1/webhooks', { token: otherToken })
    expect(list.body.data.map((w: { webhook_id: string }) => w.webhook_id)).not.toContain(webhook_id)
  })

  it('never resolves a name but localhost in tests: a delivery to a public-looking host fails as not found', async () => {
    const key = (await t.createKey()).token
    const { webhook_id } = await subscribe(['agent.created'], 'https://example.com/never', key)
    const agent = await t.request('POST', '/v1/agents', {
      token: key,
      body: { name: 'a', behavior: 'autonomous' },
    })
    expect(agent.status).toBe(201)
    const [row] = await deliveriesUntil(key, webhook_id, (rows) => rows.some((r) => r.attempts >= 1))
    expect((row as { last_error: string | null }).last_error).toMatch(
      /ENOTFOUND example\.com \(tests resolve localhost only\)/,
    )
  })

  it('pages the subscription list with cursors', async () => {
    const key = (await t.createKey()).token
    for (let i = 0; i < 3; i++) await subscribe(['agent.created'], `https://example.com/h${i}`, key)
    const first = await t.request('GET', '/v1/webhooks?limit=2', { token: key })
    expect(first.body.data).toHaveLength(2)
    expect(first.body.next_cursor).toEqual(expect.any(String))
    const second = await t.request('GET', `/v1/webhooks?limit=2&cursor=${first.body.next_cursor}`, {
      token: key,
    })
    expect(second.body.data.map((w: { url: string }) => w.url)).toEqual(['https://example.com/h2'])
    expect(second.body.next_cursor).toBeNull()
    expect((await t.request('GET', '/v1/webhooks?limit=500', { token: key })).status).toBe(400)
    expect((await t.request('GET', '/v1/webhooks?cursor=%%%', { token: key })).body.error.code).toBe(
      'invalid_cursor',
    )
  })

  it('replays a creation under the same Idempotency-Key instead of subscribing twice', async () => {
    const key = (await t.createKey()).token
    const body = { url: 'https://example.com/idem', events: ['agent.created'], secret: SECRET }
    const headers = { 'idempotency-key': 'create-webhook-1' }
    const first = await t.request('POST', '/v1/webhooks', { token: key, body, headers })
    const again = await t.request('POST', '/v1/webhooks', { token: key, body, headers })
    expect(first.status).toBe(201)
    expect(again.status).toBe(201)
    expect(again.body.webhook_id).toBe(first.body.webhook_id)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.text).not.toContain(SECRET)
    const list = await t.request('GET', '/v1/webhooks', { token: key })
    expect(list.body.data).toHaveLength(1)
  })

  it('deletes a subscription (204), after which it is gone', async () => {
    const { webhook_id } = await subscribe(['agent.created'])
    const del = await t.request('DELETE', `/v1/webhooks/${webhook_id}`, { token })
    expect(del.status).toBe(204)
    expect(del.text).toBe('')
    expect((await t.request('GET', `/v1/webhooks/${webhook_id}`, { token })).status).toBe(404)
    expect((await t.request('DELETE', `/v1/webhooks/${webhook_id}`, { token })).status).toBe(404)
  })
})

describe('deliveries end to end', () => {
  it('delivers a real event signed both ways, logs it, and redelivers it with the same webhook-id', async () => {
    const key = (await t.createKey()).token
    const { webhook_id } = await subscribe(['agent.created'], receiver.url, key)
    const before = receiver.received.length
    const agent = await t.request('POST', '/v1/agents', {
      token: key,
      body: { name: 'hooked', behavior: 'autonomous' },
    })
    expect(agent.status).toBe(201)
    const [got] = (await receiver.waitFor(before + 1)).slice(before)
    if (!got) throw new Error('no delivery')
    const body = JSON.parse(got.body)
    expect(body).toMatchObject({ event: 'agent.created', agent_id: agent.body.agent_id })
    expect(body.id).toMatch(/^evt_/)
    expect(
      new Webhook(SECRET, { format: 'raw' }).verify(got.body, got.headers as Record<string, string>),
    ).toEqual(body)
    expect(independentlyVerified(got.body, SECRET)).toBe(true)
    expect(verifySignature(got.body, [SECRET])).toBe(true)

    const readKey = key
    const log = await deliveriesUntil(key, webhook_id, (rows) => rows[0]?.status === 'delivered')
    expect(log).toHaveLength(1)
    expect(log[0]).toMatchObject({
      delivery_id: got.headers['webhook-id'],
      webhook_id,
      event_id: body.id,
      event: 'agent.created',
      attempts: 1,
      last_status_code: 200,
      last_error: null,
      next_attempt_at: null,
    })

    const again = await t.request(
      'POST',
      `/v1/webhooks/${webhook_id}/deliveries/${log[0].delivery_id}/redeliver`,
      {
        token: readKey,
      },
    )
    expect(again.status).toBe(202)
    expect(again.body).toMatchObject({ status: 'pending', attempts: 0 })
    const [redelivered] = (await receiver.waitFor(before + 2)).slice(before + 1)
    expect(redelivered?.headers['webhook-id']).toBe(got.headers['webhook-id'])
    expect(JSON.parse(redelivered?.body ?? '{}').id).toBe(body.id)
    const unknown = await t.request(
      'POST',
      `/v1/webhooks/${webhook_id}/deliveries/dlv_00000000000000000000000000/redeliver`,
      { token: key },
    )
    expect(unknown.status).toBe(404)
  })

  it('retries a 500 in the background and records every attempt', async () => {
    const key = (await t.createKey()).token
    const { webhook_id } = await subscribe(['agent.created'], receiver.url, key)
    receiver.script(500, 500)
    await t.request('POST', '/v1/agents', { token: key, body: { name: 'flaky', behavior: 'autonomous' } })
    const [row] = await deliveriesUntil(key, webhook_id, (rows) => rows[0]?.status === 'delivered')
    expect(row).toMatchObject({ attempts: 3, last_status_code: 200 })
  })

  it('signs with both secrets after a rotation with overlap', async () => {
    const key = (await t.createKey()).token
    const { webhook_id } = await subscribe(['agent.created'], receiver.url, key)
    const rotated = await t.request('POST', `/v1/webhooks/${webhook_id}/rotate-secret`, {
      token: key,
      body: { secret: 'second-secret-0002', overlap_seconds: 3600 },
    })
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret_rotated_at).toEqual(expect.any(String))
    expect(rotated.text).not.toContain('second-secret-0002')
    const bad = await t.request('POST', `/v1/webhooks/${webhook_id}/rotate-secret`, {
      token: key,
      body: { secret: 'second-secret-0003', overlap_seconds: -1 },
    })
    expect(bad.status).toBe(400)
    const before = receiver.received.length
    await t.request('POST', '/v1/agents', { token: key, body: { name: 'rotated', behavior: 'autonomous' } })
    const [got] = (await receiver.waitFor(before + 1)).slice(before)
    expect(String(got?.headers['webhook-signature']).split(' ')).toHaveLength(2)
    expect(verifySignature(got?.body ?? '', ['second-secret-0002'])).toBe(true)
    expect(verifySignature(got?.body ?? '', [SECRET])).toBe(true)
  })
})

describe('private receivers', () => {
  it('refuses loopback and private URLs when the operator has not allowed them', async () => {
    const strict = await startTestServer({ config: { privateTargets: NO_TARGETS } })
    try {
      const key = (await strict.createKey()).token
      for (const url of [
        'http://127.0.0.1:8080/x',
        'http://localhost/x',
        'http://10.0.0.8/x',
        'http://[::1]/x',
      ]) {
        const res = await strict.request('POST', '/v1/webhooks', {
          token: key,
          body: { url, events: ['agent.created'], secret: SECRET },
        })
        expect(res.status, url).toBe(400)
        expect(res.body.error.code).toBe('invalid_request')
      }
      const ok = await strict.request('POST', '/v1/webhooks', {
        token: key,
        body: { url: 'https://hooks.example.com/x', events: ['agent.created'], secret: SECRET },
      })
      expect(ok.status).toBe(201)
    } finally {
      await strict.close()
    }
  })
})
