import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toRfc3339 } from '../../src/domain/clock.js'
import { assertMatchesSchema } from '../support/openapi-validator.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { createAgent, registerTool, startRun, status, waitForRun } from './helpers.js'

/** Which contract schema documents each event kind's delivery body. */
const SCHEMA: Record<string, string> = {
  'run.awaiting_approval': 'RunAwaitingApprovalEvent',
  'policy.denied': 'PolicyDeniedEvent',
  'run.started': 'RunLifecycleEvent',
  'run.succeeded': 'RunLifecycleEvent',
  'run.failed': 'RunLifecycleEvent',
  'run.paused': 'RunLifecycleEvent',
  'run.resumed': 'RunLifecycleEvent',
  'run.cancelled': 'RunLifecycleEvent',
}

describe('run events', () => {
  let t: TestServer
  let token: string
  beforeAll(async () => {
    t = await startTestServer()
    token = (await t.createKey()).token
  })
  afterAll(() => t.close())

  it('appends one event per state change, each with the body the contract documents', async () => {
    await registerTool(t, token, { name: 'lookup' })
    await registerTool(t, token, { name: 'guarded', required_scopes: ['vault:open'] })
    const supervised = await createAgent(t, token, 'supervised', ['lookup'])
    const a = await startRun(t, token, supervised, { inputs: { q: 'x'.repeat(1000) } })
    const waiting = await waitForRun(t, token, a.run_id, status('awaiting_approval'))
    expect(waiting.awaiting[0].step_id).toBe('step_1')
    await t.request('POST', `/v1/runs/${a.run_id}/pause`, { token })
    await t.request('POST', `/v1/runs/${a.run_id}/resume`, { token })
    await t.request('POST', `/v1/runs/${a.run_id}/steps/step_1/approval`, {
      token,
      body: { decision: 'approve' },
    })
    await waitForRun(t, token, a.run_id, status('succeeded'))

    const narrow = await t.createKey({ scopes: ['agents:write', 'runs:write', 'runs:read', 'tools:write'] })
    await registerTool(t, narrow.token, { name: 'guarded', required_scopes: ['vault:open'] })
    const autonomous = await createAgent(t, narrow.token, 'autonomous', ['guarded'])
    const b = await startRun(t, narrow.token, autonomous)
    await waitForRun(t, narrow.token, b.run_id, status('failed'))
    const c = await startRun(t, token, supervised)
    await waitForRun(t, token, c.run_id, status('awaiting_approval'))
    await t.request('POST', `/v1/runs/${c.run_id}/cancel`, { token })

    const events = await t.services.events.read(0, 1000)
    const kindsOf = (runId: string) => events.filter((e) => e.data.run_id === runId).map((e) => e.kind)
    expect(kindsOf(a.run_id)).toEqual([
      'run.started',
      'run.awaiting_approval',
      'run.paused',
      'run.resumed',
      'run.resumed',
      'run.succeeded',
    ])
    expect(kindsOf(b.run_id)).toEqual(['run.started', 'policy.denied', 'run.failed'])
    expect(kindsOf(c.run_id)).toEqual(['run.started', 'run.awaiting_approval', 'run.cancelled'])
    for (const e of events) {
      const schema = SCHEMA[e.kind]
      if (!schema) continue
      assertMatchesSchema(schema, {
        id: e.id,
        event: e.kind,
        ts: toRfc3339(e.ts),
        ...e.data,
        signature: `t=1,v1=${'0'.repeat(64)}`,
      })
    }
    const approval = events.find((e) => e.kind === 'run.awaiting_approval' && e.data.run_id === a.run_id)
    expect(approval?.data).toMatchObject({
      step_id: 'step_1',
      queue: 'ops-review',
      payload_preview: { tool: 'lookup', truncated: true },
    })
    const denied = events.find((e) => e.kind === 'policy.denied')
    expect(denied?.data.detail).toMatchObject({ violation: 'missing_scope', observed: ['vault:open'] })
  })
})
