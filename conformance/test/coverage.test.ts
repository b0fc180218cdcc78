import { describe, expect, it } from 'vitest'
import { defaultContract } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { CoverageRecorder, coverageLine } from '../src/coverage.js'
import type { Exchange } from '../src/types.js'

const contract = Contract.fromFile(defaultContract())

function exchange(method: string, path: string, extra: Partial<Exchange> = {}): Exchange {
  return {
    method,
    url: `http://127.0.0.1:1${path}`,
    requestHeaders: { authorization: 'Bearer aok_1234…' },
    durationMs: 1,
    ...extra,
  }
}

describe('contract coverage from the run’s traffic', () => {
  it('counts operation × documented status, and statuses the contract does not list', () => {
    const c = new CoverageRecorder(contract)
    c.observe(exchange('GET', '/v1/tools/tool_1'), { status: 200, body: {} })
    c.observe(exchange('GET', '/v1/tools/tool_2'), { status: 404, body: {} })
    c.observe(exchange('GET', '/v1/tools/tool_3'), { status: 418, body: {} })
    const op = c.report().operations.find((o) => o.method === 'GET' && o.path === '/v1/tools/{tool_id}')!
    expect(op.produced).toEqual(['200', '404'])
    expect(op.undocumented).toEqual(['418'])
    expect(op.missing).toContain('401')
    expect(op.missing).not.toContain('500')
    expect(op.unprovokable).toEqual(['500', '503'])
  })

  it('classifies the error paths by the request, whatever the answer', () => {
    const c = new CoverageRecorder(contract)
    c.observe(exchange('GET', '/v1/nothing-here'), { status: 404, body: {} })
    c.observe(exchange('PUT', '/v1/tools'), { status: 405, body: {} })
    c.observe(exchange('GET', '/v2/tools'), { status: 404, body: {} })
    c.observe(exchange('GET', '/tools'), { status: 404, body: {} })
    c.observe(exchange('GET', '/v1/tools', { requestHeaders: { authorization: 'Basic abc…' } }), {
      status: 401,
      body: {},
    })
    c.observe(exchange('GET', '/v1/tools', { requestHeaders: {} }), { status: 401, body: {} })
    c.observe(
      exchange('POST', '/v1/tools', {
        requestHeaders: { authorization: 'Bearer x…', 'content-type': 'text/plain' },
        requestBody: 'hi',
      }),
      { status: 415, body: {} },
    )
    c.observe(
      exchange('POST', '/v1/tools', {
        requestHeaders: { authorization: 'Bearer x…', 'content-type': 'application/json' },
        requestBody: '{"a":',
      }),
      { status: 400, body: {} },
    )
    c.observe(
      exchange('POST', '/v1/agents', {
        requestBody: '{}',
        requestHeaders: { authorization: 'Bearer x…', 'content-type': 'application/json' },
      }),
      { status: 413, body: {} },
    )
    const paths = c.report().errorPaths
    expect(Object.entries(paths).filter(([, p]) => !p.exercised)).toEqual([])
    expect(paths['wrong-version'].statuses).toEqual([404])
    expect(paths['wrong-method'].statuses).toEqual([405])
  })

  it('records lifecycle follow-ups: after delete, retire, cancel, and with a revoked key', () => {
    const c = new CoverageRecorder(contract, new Set(['fp-expired']))
    c.observe(exchange('DELETE', '/v1/agents/agt_1'), { status: 204, body: '' })
    c.observe(exchange('GET', '/v1/agents/agt_1'), { status: 404, body: {} })
    c.observe(exchange('DELETE', '/v1/tools/tool_1'), { status: 200, body: {} })
    c.observe(exchange('POST', '/v1/agents/agt_2/runs', { requestBody: '{"inputs":{"tool":"tool_1"}}' }), {
      status: 201,
      body: {},
    })
    c.observe(exchange('POST', '/v1/runs/run_1/cancel'), { status: 200, body: {} })
    c.observe(exchange('POST', '/v1/runs/run_1/resume'), { status: 409, body: {} })
    c.observe(exchange('GET', '/v1/tools', { tokenFingerprint: 'fp-expired' }), { status: 401, body: {} })
    const l = c.report().lifecycle
    expect(l['after-delete'].seen).toEqual(['GET /v1/agents/{agent_id} → 404'])
    expect(l['after-retire'].seen).toEqual(['POST /v1/agents/{agent_id}/runs → 201'])
    expect(l['after-cancel'].seen).toEqual(['POST /v1/runs/{run_id}/resume → 409'])
    expect(l['after-revoke'].seen).toEqual(['GET /v1/tools → 401'])
  })

  it('event kinds, trace levels, frame kinds and stream messages against the contract’s own lists', () => {
    const c = new CoverageRecorder(contract)
    c.event({ event: 'run.started' })
    c.event({ type: 'tool.retired' })
    c.event({ event: 'made.up' })
    c.observe(exchange('POST', '/v1/agents/a/runs', { requestBody: '{"trace_level":"detailed"}' }), {
      status: 201,
      body: {},
    })
    // A start the deployment refused exercised nothing of its level.
    c.observe(exchange('POST', '/v1/agents/a/runs', { requestBody: '{"trace_level":"summary"}' }), {
      status: 403,
      body: {},
    })
    c.observe(exchange('GET', '/v1/runs/r/trace'), { status: 200, body: { data: [{ kind: 'tool.call' }] } })
    c.streamMessage('sent', '{"type":"subscribe"}')
    c.streamMessage('received', '{"type":"record"}')
    c.streamMessage('received', 'not json')
    const r = c.report()
    expect(r.events.produced).toEqual(['run.started', 'tool.retired', 'made.up'])
    expect(r.events.missing).toContain('run.failed')
    expect(r.traceLevels).toMatchObject({ produced: ['detailed'], missing: ['summary'] })
    expect(r.traceFrameKinds.produced).toEqual(['tool.call'])
    expect(r.streamClientMessages.produced).toEqual(['subscribe'])
    expect(r.streamServerMessages.produced).toEqual(['record'])
    // A message the suite leaves out on purpose says why; the others are plain gaps.
    expect(r.streamServerMessages.why?.gap).toMatch(/replay window/)
    expect(r.streamServerMessages.why?.pong).toBeUndefined()
    expect(coverageLine(r)).toMatch(/^contract coverage: responses 3\/\d+ .*event kinds 2\/17/)
  })
})
