/**
 * The request log: one JSON line per request with exactly the documented fields (never a token, a secret, a body
 * or a signature), lifecycle lines, and an unexpected error logged once with its stack.
 */
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createLogger } from '../../src/observability/logger.js'
import { type RunningServer, startServer } from '../../src/server.js'
import { listenPort } from '../support/ports.js'
import { LOOPBACK_TARGETS } from '../support/private-targets.js'
import { testTempDir } from '../support/temp.js'
import { REQUEST_LOG_FIELDS } from './helpers.js'

type Line = Record<string, unknown>

describe('the request log', () => {
  const chunks: string[] = []
  const lines = (): Line[] =>
    chunks
      .join('')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Line)
  let server: RunningServer
  let token: string
  let keyId: string
  let workspaceId: string

  beforeAll(async () => {
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk.toString())
        done()
      },
    })
    server = await startServer({
      config: {
        port: await listenPort(),
        host: '127.0.0.1',
        databaseUrl: `sqlite:${join(testTempDir('log-'), 'db.sqlite')}`,
        privateTargets: LOOPBACK_TARGETS,
      },
      logger: createLogger({ level: 'info', destination }),
    })
    const issued = await server.services.keyAdmin.issue({ workspace: 'logged' })
    token = issued.token
    keyId = issued.key_id
    workspaceId = issued.workspace_id
  })
  afterAll(() => server.close())

  it('writes one line per request with request id, route template, status, duration, workspace and key', async () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`
    const res = await fetch(`${server.url}/v1/webhooks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'x-request-id': 'trace-abc.1',
      },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['agent.created'], secret }),
    })
    expect(res.status).toBe(201)
    const created = (await res.json()) as { webhook_id: string }
    await fetch(`${server.url}/v1/webhooks/${created.webhook_id}`, {
      headers: { authorization: `Bearer ${token}` },
    })

    const requests = lines().filter((l) => l.msg === 'request')
    expect(requests).toHaveLength(2)
    const [post, get] = requests as [Line, Line]
    expect(Object.keys(post).sort()).toEqual(REQUEST_LOG_FIELDS)
    expect(post).toMatchObject({
      level: 30,
      req_id: 'trace-abc.1',
      method: 'POST',
      route: '/v1/webhooks',
      status: 201,
      workspace_id: workspaceId,
      key_id: keyId,
    })
    expect(post.duration_ms).toEqual(expect.any(Number))
    expect(get).toMatchObject({ method: 'GET', route: '/v1/webhooks/{webhook_id}', status: 200 })
    const text = chunks.join('')
    expect(text).not.toContain(token)
    expect(text).not.toContain(secret)
    expect(text).not.toContain('whsec_')
  })

  it('logs an unauthenticated request without workspace or key, and never the presented token', async () => {
    const bogus = 'aok_00000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
    const res = await fetch(`${server.url}/v1/agents`, { headers: { authorization: `Bearer ${bogus}` } })
    expect(res.status).toBe(401)
    const line = lines()
      .filter((l) => l.msg === 'request')
      .at(-1) as Line
    expect(line).toMatchObject({ route: '/v1/agents', status: 401 })
    expect(line.workspace_id).toBeUndefined()
    expect(chunks.join('')).not.toContain(bogus)
  })

  it('logs an unexpected error once, with its stack, at level error', async () => {
    const spy = vi.spyOn(server.services.agents, 'list').mockRejectedValueOnce(new Error('store exploded'))
    const res = await fetch(`${server.url}/v1/agents`, { headers: { authorization: `Bearer ${token}` } })
    spy.mockRestore()
    expect(res.status).toBe(500)
    const failures = lines().filter((l) => l.msg === 'request failed')
    expect(failures).toHaveLength(1)
    const failure = failures[0] as Line & { err: { message: string; stack: string } }
    expect(failure.level).toBe(50)
    expect(failure.route).toBe('/v1/agents')
    expect(failure.err.message).toBe('store exploded')
    expect(failure.err.stack).toContain('Error: store exploded')
    expect(
      lines()
        .filter((l) => l.msg === 'request')
        .at(-1),
    ).toMatchObject({ status: 500 })
  })

  it('has lifecycle lines for the migrations and the start', () => {
    const msgs = lines().map((l) => l.msg)
    expect(msgs).toContain('migrations applied')
    expect(msgs).toContain('server started')
  })
})
