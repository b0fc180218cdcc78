import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { startTestServer, type TestServer } from '../support/server.js'

let t: TestServer
const clock = new ManualClock(Date.UTC(2026, 10, 23))
let token: string
let other: string

beforeAll(async () => {
  t = await startTestServer({ clock })
  token = (await t.createKey()).token
  other = (await t.createKey()).token
})
afterAll(() => t.close())

describe('authentication (spec §5)', () => {
  it('refuses a missing token with 401, WWW-Authenticate and the envelope', async () => {
    const res = await t.request('GET', '/v1/tools')
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toBe('Bearer')
    expect(res.body.error.code).toBe('unauthenticated')
    expect(res.body.error.request_id).toBe(res.headers.get('x-request-id'))
  })

  it.each([
    ['malformed', 'Basic abc'],
    ['malformed token', 'Bearer not-a-key'],
    ['unknown', `Bearer aok_${'0'.repeat(26)}_${'A'.repeat(43)}`],
  ])('refuses a %s token', async (_name, header) => {
    const res = await t.request('GET', '/v1/tools', { headers: { authorization: header } })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toContain('Bearer')
    expect(res.body.error.code).toBe('unauthenticated')
  })

  it('refuses a right key id with a wrong secret', async () => {
    const forged = `${token.slice(0, 31)}${token.slice(31).split('').reverse().join('')}`
    const res = await t.request('GET', '/v1/tools', { token: forged })
    expect(res.status).toBe(401)
  })

  it('refuses an expired and a revoked token', async () => {
    const expiring = await t.createKey({ expiresInSeconds: 60 })
    expect((await t.request('GET', '/v1/tools', { token: expiring.token })).status).toBe(200)
    clock.advance(61_000)
    const expired = await t.request('GET', '/v1/tools', { token: expiring.token })
    expect(expired.status).toBe(401)
    expect(expired.body.error.detail.reason).toBe('expired')

    const revocable = await t.createKey()
    await t.services.keyAdmin.revoke(revocable.key_id)
    const revoked = await t.request('GET', '/v1/tools', { token: revocable.token })
    expect(revoked.status).toBe(401)
    expect(revoked.body.error.detail.reason).toBe('revoked')
  })

  it('stores only a hash of the secret', async () => {
    const issued = await t.createKey()
    const secret = issued.token.split('_').slice(2).join('_')
    const rows = await t.services.db.query('SELECT * FROM api_keys')
    expect(JSON.stringify(rows)).not.toContain(secret)
  })
})

describe('scopes: the policy gate on keys (spec §1, §7)', () => {
  it('answers 403 policy_denied with every detail field for a call outside the scopes', async () => {
    const narrow = await t.createKey({ scopes: ['agents:read'] })
    const res = await t.request('POST', '/v1/agents', {
      token: narrow.token,
      body: { name: 'a', behavior: 'autonomous' },
    })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('policy_denied')
    expect(res.body.error.detail).toEqual({
      envelope: 'api_key',
      violation: 'missing_scope',
      observed: ['agents:read'],
      limit: ['agents:write'],
      escalation_queue: 'workspace-admins',
    })
    expect((await t.request('GET', '/v1/agents', { token: narrow.token })).status).toBe(200)
  })
})

describe('tenancy: another workspace sees exactly what a missing resource gives (spec §5.6)', () => {
  it('gives identical 404s for agents, tasks and tools', async () => {
    const agent = (
      await t.request('POST', '/v1/agents', { token, body: { name: 'mine', behavior: 'autonomous' } })
    ).body
    const task = (
      await t.request('POST', `/v1/agents/${agent.agent_id}/tasks`, { token, body: { description: 'x' } })
    ).body
    const tool = (
      await t.request('POST', '/v1/tools', {
        token,
        body: {
          name: 'scoped-tool',
          provider: 'builtin:echo',
          policy_binding: { envelope: 'default', required_scopes: [] },
        },
      })
    ).body
    const pairs: [string, string, string][] = [
      ['GET', `/v1/agents/${agent.agent_id}`, '/v1/agents/agt_00000000000000000000000000'],
      ['DELETE', `/v1/agents/${agent.agent_id}`, '/v1/agents/agt_00000000000000000000000000'],
      ['POST', `/v1/agents/${agent.agent_id}/tasks`, '/v1/agents/agt_00000000000000000000000000/tasks'],
      ['GET', `/v1/tasks/${task.task_id}`, '/v1/tasks/task_00000000000000000000000000'],
      ['GET', `/v1/tools/${tool.tool_id}`, '/v1/tools/tool_00000000000000000000000000'],
      ['DELETE', `/v1/tools/${tool.tool_id}`, '/v1/tools/tool_00000000000000000000000000'],
    ]
    for (const [method, foreign, missing] of pairs) {
      const body = method === 'POST' ? { description: 'y' } : undefined
      const a = await t.request(method, foreign, { token: other, body })
      const b = await t.request(method, missing, { token: other, body })
      expect(a.status, `${method} ${foreign}`).toBe(404)
      expect(b.status).toBe(404)
      const strip = (r: typeof a) => ({ ...r.body.error, request_id: undefined })
      expect(strip(a)).toEqual(strip(b))
    }
    // And the owner still sees everything untouched.
    expect((await t.request('GET', `/v1/agents/${agent.agent_id}`, { token })).status).toBe(200)
    expect((await t.request('GET', `/v1/tools/${tool.tool_id}`, { token })).body.status).toBe('active')
  })
})

describe('request ids', () => {
  it('puts X-Request-Id on every response and keeps a well-formed incoming one', async () => {
    const res = await t.request('GET', '/v1/tools', { token, headers: { 'x-request-id': 'trace-123' } })
    expect(res.headers.get('x-request-id')).toBe('trace-123')
    const odd = await t.request('GET', '/v1/tools', {
      token,
      headers: { 'x-request-id': 'bad id with spaces' },
    })
    expect(odd.headers.get('x-request-id')).toMatch(/^req_/)
  })
})
