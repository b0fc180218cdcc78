import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listenOnTestPort } from '../support/ports.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { createAgent, registerTool, startRun, status, traceOf, waitForRun } from './helpers.js'

/** Reads an SSE response to its end; bounded by the caller's timeout. */
async function readSse(url: string, token: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers },
    signal: AbortSignal.timeout(10_000),
  })
  expect(res.headers.get('content-type')).toContain('text/event-stream')
  const text = await res.text()
  const events = text
    .split('\n\n')
    .filter((block) => block.trim() !== '' && !block.startsWith(':'))
    .map((block) => {
      const fields: Record<string, string> = {}
      for (const line of block.split('\n')) {
        const i = line.indexOf(':')
        fields[line.slice(0, i)] = line.slice(i + 1).trimStart()
      }
      return fields
    })
  return events
}

describe('trace streaming and the HTTP provider', () => {
  let t: TestServer
  let token: string
  let receiver: Server
  let receiverUrl: string
  const answers: Record<string, (body: unknown) => { status: number; body: unknown; delayMs?: number }> = {
    '/ok': () => ({ status: 200, body: { result_id: 'res_remote_1', value: 42 } }),
    '/error': () => ({ status: 500, body: { oops: true } }),
    '/slow': () => ({ status: 200, body: { value: 1 }, delayMs: 1500 }),
    '/bad-shape': () => ({ status: 200, body: { value: 'not a number' } }),
  }
  const received: { path: string; body: unknown }[] = []

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let raw = ''
      req.on('data', (c) => {
        raw += c
      })
      req.on('end', () => {
        const body = JSON.parse(raw || 'null')
        received.push({ path: req.url ?? '', body })
        const answer = answers[req.url ?? '']?.(body) ?? { status: 404, body: {} }
        setTimeout(() => {
          res.writeHead(answer.status, { 'content-type': 'application/json' })
          res.end(JSON.stringify(answer.body))
        }, answer.delayMs ?? 0).unref()
      })
    })
    await listenOnTestPort(receiver)
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
    t = await startTestServer()
    token = (await t.createKey()).token
    const schema = { type: 'object', required: ['value'], properties: { value: { type: 'number' } } }
    await registerTool(t, token, {
      name: 'remote-ok',
      provider: 'http',
      config: { url: `${receiverUrl}/ok` },
      output_schema: schema,
    })
    await registerTool(t, token, {
      name: 'remote-500',
      provider: 'http',
      config: { url: `${receiverUrl}/error` },
    })
    await registerTool(t, token, {
      name: 'remote-slow',
      provider: 'http',
      config: { url: `${receiverUrl}/slow`, timeout_ms: 200 },
    })
    await registerTool(t, token, {
      name: 'remote-shape',
      provider: 'http',
      config: { url: `${receiverUrl}/bad-shape` },
      output_schema: schema,
    })
    await registerTool(t, token, { name: 'pause-me', provider: 'builtin:delay', config: { delay_ms: 150 } })
    await registerTool(t, token, { name: 'echo' })
  })
  afterAll(async () => {
    await t.close()
    receiver.closeAllConnections()
    await new Promise((r) => receiver.close(r))
  })

  it('POSTs the step input to the tool URL and records the result id it returns', async () => {
    const agent = await createAgent(t, token, 'autonomous', ['remote-ok'])
    const run = await startRun(t, token, agent, { inputs: { query: 'weather' } })
    const done = await waitForRun(t, token, run.run_id, status('succeeded'))
    expect(done.outcome.results[0]).toMatchObject({ tool: 'remote-ok', result: 'res_remote_1' })
    const call = received.find((r) => r.path === '/ok')
    expect(call?.body).toEqual({
      run_id: run.run_id,
      step_id: 'step_1',
      tool: 'remote-ok',
      input: { query: 'weather' },
    })
  })

  for (const [tool, reason] of [
    ['remote-500', 'HTTP 500'],
    ['remote-slow', 'within 200 ms'],
    ['remote-shape', 'output_schema'],
  ] as const) {
    it(`fails the step with a clear reason when the tool ${tool.replace('remote-', '')}s`, async () => {
      const agent = await createAgent(t, token, 'autonomous', [tool, 'echo'])
      const run = await startRun(t, token, agent)
      const done = await waitForRun(t, token, run.run_id, status('failed'))
      expect(done.outcome.error.code).toBe('tool_failed')
      const frames = await traceOf(t, token, run.run_id)
      const failed = frames.find((f) => f.kind === 'step.failed')
      expect(failed.step_id).toBe('step_1')
      expect(failed.detail.reason).toContain(reason)
      expect(frames.some((f) => f.kind === 'tool.call')).toBe(false)
    })
  }

  it('refuses tool registrations the providers cannot run', async () => {
    for (const body of [
      { provider: 'ftp', config: {} },
      { provider: 'http', config: { url: 'file:///etc/passwd' } },
      { provider: 'http', config: { url: 'http://user:pw@example.com/' } },
      { provider: 'builtin:delay', config: { delay_ms: -1 } },
    ]) {
      const res = await t.request('POST', '/v1/tools', {
        token,
        body: { name: 'bad-tool', policy_binding: { envelope: 'default', required_scopes: [] }, ...body },
      })
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.error.code).toBe('invalid_request')
    }
  })

  it('streams the same frames as paging, live until the run ends, and resumes from Last-Event-ID', async () => {
    const agent = await createAgent(t, token, 'supervised', ['pause-me', 'echo'])
    const run = await startRun(t, token, agent)
    const streamed = readSse(`${t.baseUrl}/v1/runs/${run.run_id}/trace`, token)
    for (const step of ['step_1', 'step_2']) {
      await waitForRun(t, token, run.run_id, status('awaiting_approval'))
      await t.request('POST', `/v1/runs/${run.run_id}/steps/${step}/approval`, {
        token,
        body: { decision: 'approve' },
      })
    }
    const events = await streamed
    expect(events.at(-1)?.event).toBe('end')
    const frames = events.filter((e) => e.event === 'frame').map((e) => JSON.parse(e.data ?? '{}'))
    expect(events.filter((e) => e.event === 'frame').map((e) => Number(e.id))).toEqual(
      frames.map((f) => f.seq),
    )
    const paged = await traceOf(t, token, run.run_id)
    expect(frames).toEqual(paged)
    expect(paged.at(-1).kind).toBe('run.succeeded')

    const resumed = await readSse(`${t.baseUrl}/v1/runs/${run.run_id}/trace`, token, { 'last-event-id': '4' })
    const tail = resumed.filter((e) => e.event === 'frame').map((e) => JSON.parse(e.data ?? '{}'))
    expect(tail).toEqual(paged.slice(4))
  })

  it('answers input the contract refuses with 400 on the stream paths, the same error as the paging path', async () => {
    const errorOf = (body: { error: Record<string, unknown> }) => {
      const { request_id: _id, ...error } = body.error
      return error
    }
    const wellFormed = 'run_00000000000000000000000000'
    for (const [field, run, query] of [
      ['run_id', `run_${'x'.repeat(80)}`, ''],
      ['cursor', wellFormed, `?cursor=${'c'.repeat(513)}`],
    ] as const) {
      const paged = await t.request('GET', `/v1/runs/${run}/trace${query}`, { token })
      expect(paged.status, field).toBe(400)
      expect(paged.body.error).toMatchObject({ code: 'invalid_request', detail: { fields: [field] } })
      for (const [path, accept] of [
        [`/v1/runs/${run}/trace/stream${query}`, 'text/event-stream'],
        [`/v1/runs/${run}/trace${query}`, 'text/event-stream'],
      ] as const) {
        const res = await t.request('GET', path, { token, headers: { accept } })
        expect(res.status, path).toBe(400)
        expect(errorOf(res.body), path).toEqual(errorOf(paged.body))
      }
    }
    // Last-Event-ID is the stream operation's own header: digits (at most 32) in the contract, and a seq here.
    for (const lastEventId of ['abc', '1'.repeat(33), '9'.repeat(17)]) {
      const res = await t.request('GET', `/v1/runs/${wellFormed}/trace/stream`, {
        token,
        headers: { accept: 'text/event-stream', 'last-event-id': lastEventId },
      })
      expect(res.status, lastEventId).toBe(400)
      expect(res.body.error.code).toBe('invalid_request')
      expect(res.body.error.detail.fields).toEqual(['Last-Event-ID'])
      expect(res.body.error.detail.issues[0].location).toBe('header')
    }
    // A well-formed id of no run is still 404.
    const missing = await t.request('GET', '/v1/runs/run_00000000000000000000000000/trace/stream', { token })
    expect(missing.status).toBe(404)
  })

  it('gives a live run a cursor to poll from and a finished run a null cursor at the end', async () => {
    const agent = await createAgent(t, token, 'supervised', ['echo'])
    const run = await startRun(t, token, agent)
    await waitForRun(t, token, run.run_id, status('awaiting_approval'))
    const live = await t.request('GET', `/v1/runs/${run.run_id}/trace?limit=200`, { token })
    expect(live.body.run_status).toBe('awaiting_approval')
    expect(live.body.next_cursor).not.toBeNull()
    await t.request('POST', `/v1/runs/${run.run_id}/cancel`, { token })
    const more = await t.request('GET', `/v1/runs/${run.run_id}/trace?cursor=${live.body.next_cursor}`, {
      token,
    })
    expect(more.body.data.map((f: { kind: string }) => f.kind)).toEqual([
      'approval.flushed',
      'control.cancelled',
    ])
    expect(more.body.next_cursor).toBeNull()
    const bad = await t.request('GET', `/v1/runs/${run.run_id}/trace?cursor=not-a-cursor`, { token })
    expect(bad.status).toBe(400)
    expect((await t.request('GET', `/v1/runs/${run.run_id}/trace?limit=201`, { token })).status).toBe(400)
  })
})
