import { OpenAPIHono } from '@hono/zod-openapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { errorResponse, toApiError } from '../../src/http/errors.js'
import { idempotency } from '../../src/http/middleware/idempotency.js'
import type { AppEnv } from '../../src/surface/context.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'

const DAY_MS = 24 * 3600 * 1000

describe.each(backends())('idempotency on $name', (backend) => {
  let t: TestServer
  let token: string
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12))

  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl(), clock })
    token = (await t.createKey()).token
  })
  afterAll(() => t.close())

  const postAgent = (key: string, name: string, tok = token) =>
    t.request('POST', '/v1/agents', {
      token: tok,
      headers: { 'Idempotency-Key': key },
      body: { name, capabilities: ['search'], behavior: 'autonomous' },
    })

  it('replays the first response byte for byte, says so, and does not do the work again', async () => {
    const first = await postAgent('replay-1', 'alpha')
    expect(first.status).toBe(201)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    const again = await postAgent('replay-1', 'alpha')
    expect(again.status).toBe(201)
    expect(again.text).toBe(first.text)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'))
    // Fresh per-request headers are not replayed.
    expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'))
    const list = await t.request('GET', '/v1/agents?limit=200', { token })
    expect(list.body.data.filter((a: { name: string }) => a.name === 'alpha')).toHaveLength(1)
  })

  it('treats a body with the same meaning (key order, whitespace) as the same request', async () => {
    const first = await postAgent('canon-1', 'beta')
    const again = await t.request('POST', '/v1/agents', {
      token,
      headers: { 'Idempotency-Key': 'canon-1', 'content-type': 'application/json' },
      rawBody: '{ "behavior":"autonomous", "capabilities":["search"],  "name":"beta" }',
    })
    expect(again.status).toBe(201)
    expect(again.text).toBe(first.text)
  })

  it('answers 409 idempotency_key_reused for a different body or a different path', async () => {
    await postAgent('reuse-1', 'gamma')
    const otherBody = await postAgent('reuse-1', 'gamma-2')
    expect(otherBody.status).toBe(409)
    expect(otherBody.body.error.code).toBe('idempotency_key_reused')
    const otherPath = await t.request('POST', '/v1/tools', {
      token,
      headers: { 'Idempotency-Key': 'reuse-1' },
      body: { name: 'x', provider: 'builtin:echo' },
    })
    expect(otherPath.status).toBe(409)
    expect(otherPath.body.error.code).toBe('idempotency_key_reused')
  })

  it('scopes keys to the workspace', async () => {
    const other = (await t.createKey()).token
    const mine = await postAgent('shared-name', 'delta')
    const theirs = await postAgent('shared-name', 'delta-other', other)
    expect(mine.status).toBe(201)
    expect(theirs.status).toBe(201)
    expect(theirs.body.agent_id).not.toBe(mine.body.agent_id)
  })

  it('rejects keys that are empty, too long or not printable ASCII with 400', async () => {
    for (const key of ['', 'x'.repeat(256), 'has space', 'naïve']) {
      const res = await fetch(`${t.baseUrl}/v1/agents`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify({ name: 'bad-key', capabilities: [], behavior: 'autonomous' }),
      }).catch(() => undefined)
      // fetch itself refuses non-ByteString header values; the server must refuse the rest.
      if (!res) continue
      expect(res.status, `key ${JSON.stringify(key)}`).toBe(400)
      const body = (await res.json()) as { error: { code: string } }
      expect(body.error.code).toBe('invalid_idempotency_key')
    }
    expect((await postAgent('x'.repeat(255), 'ok-long')).status).toBe(201)
  })

  it('frees the key after 24 hours, and the purge drops expired records', async () => {
    const first = await postAgent('expiry-1', 'epsilon')
    clock.advance(DAY_MS - 1000)
    expect((await postAgent('expiry-1', 'epsilon-changed')).status).toBe(409)
    clock.advance(2000)
    const later = await postAgent('expiry-1', 'epsilon-changed')
    expect(later.status).toBe(201)
    expect(later.body.agent_id).not.toBe(first.body.agent_id)
    clock.advance(DAY_MS + 1000)
    const purged = await t.services.idempotency.purge()
    expect(purged.keys).toBeGreaterThanOrEqual(1)
    const rows = await t.services.db.query('SELECT idem_key FROM idempotency_keys')
    expect(rows).toHaveLength(0)
  })

  it('50 simultaneous identical POSTs with one key create exactly one resource', async () => {
    const fresh = await t.createKey()
    const body = { name: 'concurrent', capabilities: ['search'], behavior: 'autonomous' }
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        t.request('POST', '/v1/agents', {
          token: fresh.token,
          headers: { 'Idempotency-Key': 'burst-of-50' },
          body,
        }),
      ),
    )
    const created = answers.filter((a) => a.status === 201)
    const busy = answers.filter((a) => a.status === 409)
    expect(created.length + busy.length).toBe(50)
    expect(created.length).toBeGreaterThanOrEqual(1)
    for (const b of busy) expect(b.body.error.code).toBe('idempotency_key_in_progress')
    expect(new Set(created.map((a) => a.text)).size).toBe(1)
    const list = await t.request('GET', '/v1/agents', { token: fresh.token })
    expect(list.body.data).toHaveLength(1)
  })
})

describe('idempotency middleware and server errors', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer()
  })
  afterAll(() => t.close())

  /** A bare app behind the idempotency middleware, as the identity of a fresh key. */
  async function keyedApp(): Promise<OpenAPIHono<AppEnv>> {
    const issued = await t.createKey()
    const verified = await t.services.keys.verifyRequest({ accessToken: issued.token })
    if (typeof verified === 'string') throw new Error(`key refused: ${verified}`)
    const auth = {
      workspaceId: verified.workspace.id,
      keyId: verified.keyId,
      identity: verified.identity,
      scopes: verified.scopes,
      workspace: verified.workspace,
    }
    const app = new OpenAPIHono<AppEnv>()
    app.onError((err, c) => errorResponse(c, toApiError(err)))
    app.use('*', async (c, next) => {
      c.set('requestId', 'req_test')
      c.set('auth', auth)
      await next()
    })
    app.use('*', idempotency(t.services.idempotency))
    return app
  }

  it('does not store a 5xx, so a retry with the same key can succeed', async () => {
    let calls = 0
    const app = await keyedApp()
    app.post('/flaky', (c) => {
      calls++
      return calls === 1 ? c.json({ boom: true }, 503) : c.json({ ok: calls }, 201)
    })
    app.post('/throws', () => {
      throw new Error('kaboom')
    })
    const send = (path: string) =>
      app.request(path, { method: 'POST', headers: { 'idempotency-key': 'k1' }, body: '{}' })
    expect((await send('/flaky')).status).toBe(503)
    const retry = await send('/flaky')
    expect(retry.status).toBe(201)
    expect(await retry.json()).toEqual({ ok: 2 })
    const replay = await send('/flaky')
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(calls).toBe(2)

    const thrown = await app.request('/throws', {
      method: 'POST',
      headers: { 'idempotency-key': 'k2' },
      body: '{}',
    })
    expect(thrown.status).toBe(500)
    const row = await t.services.db.one('SELECT idem_key FROM idempotency_keys WHERE idem_key = $1', ['k2'])
    expect(row).toBeUndefined()
  })
  it('replays the content type and Location however the route set them', async () => {
    const app = await keyedApp()
    app.post('/plain', (c) => c.json({ a: 1 }, 201))
    app.post('/located', (c) => {
      c.header('Location', '/v1/things/1')
      return c.json({ a: 2 }, 201)
    })
    app.post('/named', (c) => c.json({ a: 3 }, 201, { 'Content-Type': 'application/problem+json' }))
    app.post('/init', (c) => c.json({ a: 4 }, { status: 202, headers: { Location: '/v1/things/4' } }))
    app.post('/text', (c) => c.text('done', 201))
    for (const path of ['/plain', '/located', '/named', '/init', '/text']) {
      const send = () =>
        app.request(path, { method: 'POST', headers: { 'idempotency-key': `h${path}` }, body: '{}' })
      const first = await send()
      const replay = await send()
      expect(replay.headers.get('idempotent-replayed'), path).toBe('true')
      expect(replay.status, path).toBe(first.status)
      expect(await replay.text(), path).toBe(await first.text())
      for (const name of ['content-type', 'location'])
        expect(replay.headers.get(name), `${path} ${name}`).toBe(first.headers.get(name))
    }
  })
})
