import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'
import {
  countsFromTrace,
  createAgent,
  registerTool,
  startRun,
  status,
  traceOf,
  waitForRun,
} from './helpers.js'

describe.each(backends())('run lifecycle on $name', (backend) => {
  let t: TestServer
  let token: string
  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl() })
    token = (await t.createKey()).token
    await registerTool(t, token, { name: 'search' })
    await registerTool(t, token, {
      name: 'summarize',
      provider: 'builtin:data',
      config: { data: { summary: 'ok' } },
    })
    await registerTool(t, token, { name: 'slow', provider: 'builtin:delay', config: { delay_ms: 300 } })
    await registerTool(t, token, {
      name: 'broken',
      provider: 'builtin:fail',
      config: { message: 'upstream said no' },
    })
    await registerTool(t, token, { name: 'write', idempotent: false })
  })
  afterAll(() => t.close())

  it('plans from capabilities, runs every step and succeeds with consistent counts', async () => {
    const agent = await createAgent(t, token, 'autonomous', ['search', 'not-a-tool', 'summarize'])
    const started = await startRun(t, token, agent, { inputs: { q: 'hello' } })
    expect(started).toMatchObject({ agent_id: agent, status: 'queued', policy_envelope: 'default' })
    expect(started.trace_url).toBe(`/v1/runs/${started.run_id}/trace`)
    const done = await waitForRun(t, token, started.run_id, status('succeeded'))
    expect(done.plan).toEqual({ steps_total: 2, steps_completed: 2, steps_pending: 0, steps_escalated: 0 })
    expect(done.outcome.status).toBe('succeeded')
    expect(done.outcome.results.map((r: { tool: string }) => r.tool)).toEqual(['search', 'summarize'])
    expect(done.started_at).not.toBeNull()
    expect(done.finished_at).not.toBeNull()
    const frames = await traceOf(t, token, started.run_id)
    expect(frames.map((f) => f.kind)).toEqual([
      'run.started',
      'policy.decision',
      'tool.call',
      'policy.decision',
      'tool.call',
      'run.succeeded',
    ])
    expect(frames.map((f) => f.seq)).toEqual([1, 2, 3, 4, 5, 6])
    expect(frames.filter((f) => f.kind === 'tool.call').every((f) => typeof f.result === 'string')).toBe(true)
    expect(countsFromTrace(frames, 2)).toEqual(done.plan)
  })

  it('fails the run with the reason in the trace when a tool fails', async () => {
    const agent = await createAgent(t, token, 'autonomous', ['search', 'broken', 'summarize'])
    const run = await startRun(t, token, agent)
    const done = await waitForRun(t, token, run.run_id, status('failed'))
    expect(done.outcome.error.code).toBe('tool_failed')
    const frames = await traceOf(t, token, run.run_id)
    const failed = frames.find((f) => f.kind === 'step.failed')
    expect(failed).toMatchObject({ step_id: 'step_2', tool: 'broken' })
    expect(failed.detail.reason).toContain('upstream said no')
    expect(done.plan).toEqual(countsFromTrace(frames, 3))
    expect(done.plan.steps_pending).toBe(1)
  })

  it('pauses in the middle of a plan and resumes exactly where it stopped', async () => {
    const agent = await createAgent(t, token, 'autonomous', ['slow', 'search', 'slow'])
    const run = await startRun(t, token, agent)
    await waitForRun(t, token, run.run_id, (r) => r.status === 'running' && r.trace_cursor !== null)
    const paused = await t.request('POST', `/v1/runs/${run.run_id}/pause`, { token })
    expect(paused.status).toBe(200)
    expect(paused.body.status).toBe('paused')
    // The in-flight call finishes and is recorded; nothing after it runs while paused.
    await new Promise((r) => setTimeout(r, 700))
    const still = await t.request('GET', `/v1/runs/${run.run_id}`, { token })
    expect(still.body.status).toBe('paused')
    const completedWhilePaused = still.body.plan.steps_completed
    expect(completedWhilePaused).toBeLessThanOrEqual(1)
    expect((await t.request('POST', `/v1/runs/${run.run_id}/pause`, { token })).status).toBe(409)
    const resumed = await t.request('POST', `/v1/runs/${run.run_id}/resume`, { token })
    expect(resumed.status).toBe(200)
    expect(resumed.body.status).toBe('running')
    const done = await waitForRun(t, token, run.run_id, status('succeeded'))
    const frames = await traceOf(t, token, run.run_id)
    expect(frames.filter((f) => f.kind === 'tool.call').map((f) => f.step_id)).toEqual([
      'step_1',
      'step_2',
      'step_3',
    ])
    const kinds = frames.map((f) => f.kind)
    expect(kinds.indexOf('control.paused')).toBeLessThan(kinds.indexOf('control.resumed'))
    expect(done.plan).toEqual(countsFromTrace(frames, 3))
  })

  it('answers illegal controls with 409 invalid_state and changes nothing', async () => {
    const agent = await createAgent(t, token, 'autonomous', ['search'])
    const run = await startRun(t, token, agent)
    await waitForRun(t, token, run.run_id, status('succeeded'))
    const before = await t.request('GET', `/v1/runs/${run.run_id}/trace?limit=200`, { token })
    for (const action of ['pause', 'resume', 'cancel']) {
      const res = await t.request('POST', `/v1/runs/${run.run_id}/${action}`, { token })
      expect(res.status).toBe(409)
      expect(res.body.error.code).toBe('invalid_state')
      expect(res.body.error.detail).toMatchObject({ status: 'succeeded', action })
    }
    const after = await t.request('GET', `/v1/runs/${run.run_id}/trace?limit=200`, { token })
    expect(after.body.data).toEqual(before.body.data)
  })

  it('supervised agents wait for approval at every step; approving moves the run on', async () => {
    const agent = await createAgent(t, token, 'supervised', ['search', 'summarize'])
    const run = await startRun(t, token, agent)
    for (const step of ['step_1', 'step_2']) {
      const waiting = await waitForRun(t, token, run.run_id, status('awaiting_approval'))
      expect(waiting.awaiting).toHaveLength(1)
      expect(waiting.awaiting[0]).toMatchObject({ step_id: step, queue: 'ops-review' })
      const ok = await t.request('POST', `/v1/runs/${run.run_id}/steps/${step}/approval`, {
        token,
        body: { decision: 'approve' },
      })
      expect(ok.status).toBe(200)
    }
    const done = await waitForRun(t, token, run.run_id, status('succeeded'))
    expect(done.plan.steps_escalated).toBe(2)
    expect(done.plan).toEqual(countsFromTrace(await traceOf(t, token, run.run_id), 2))
  })

  it('hybrid agents escalate only non-idempotent tools; rejection fails the run', async () => {
    const agent = await createAgent(t, token, 'hybrid', ['search', 'write', 'summarize'])
    const run = await startRun(t, token, agent)
    const waiting = await waitForRun(t, token, run.run_id, status('awaiting_approval'))
    expect(waiting.awaiting[0].step_id).toBe('step_2')
    expect(waiting.plan.steps_completed).toBe(1)
    const wrongStep = await t.request('POST', `/v1/runs/${run.run_id}/steps/step_3/approval`, {
      token,
      body: { decision: 'approve' },
    })
    expect(wrongStep.status).toBe(409)
    const rejected = await t.request('POST', `/v1/runs/${run.run_id}/steps/step_2/approval`, {
      token,
      body: { decision: 'reject', comment: 'not today' },
    })
    expect(rejected.status).toBe(200)
    expect(rejected.body.status).toBe('failed')
    expect(rejected.body.outcome.error.code).toBe('approval_rejected')
  })

  it('cancel while awaiting approval flushes the pending approvals', async () => {
    const agent = await createAgent(t, token, 'supervised', ['search'])
    const run = await startRun(t, token, agent)
    await waitForRun(t, token, run.run_id, status('awaiting_approval'))
    const cancelled = await t.request('POST', `/v1/runs/${run.run_id}/cancel`, { token })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body.status).toBe('cancelled')
    expect(cancelled.body.awaiting).toEqual([])
    expect(cancelled.body.outcome.status).toBe('cancelled')
    const frames = await traceOf(t, token, run.run_id)
    expect(frames.map((f) => f.kind).slice(-2)).toEqual(['approval.flushed', 'control.cancelled'])
    const late = await t.request('POST', `/v1/runs/${run.run_id}/steps/step_1/approval`, {
      token,
      body: { decision: 'approve' },
    })
    expect(late.status).toBe(409)
  })

  it('cancel during a call drops the call’s late answer: the trace and plan stay as the cancel left them', async () => {
    await registerTool(t, token, { name: 'slower', provider: 'builtin:delay', config: { delay_ms: 2000 } })
    const agent = await createAgent(t, token, 'autonomous', ['slower', 'slower'])
    const run = await startRun(t, token, agent)
    // The first call is in flight once its allow decision is the trace's last frame (the tool answers after 2 s).
    let frames: Awaited<ReturnType<typeof traceOf>> = []
    for (let i = 0; i < 100 && frames.at(-1)?.kind !== 'policy.decision'; i++) {
      await new Promise((r) => setTimeout(r, 10))
      frames = await traceOf(t, token, run.run_id)
    }
    expect(frames.map((f) => f.kind)).toEqual(['run.started', 'policy.decision'])
    const cancelled = await t.request('POST', `/v1/runs/${run.run_id}/cancel`, { token })
    expect(cancelled.status).toBe(200)
    const atCancel = await traceOf(t, token, run.run_id)
    expect(atCancel.map((f) => f.kind)).toEqual(['run.started', 'policy.decision', 'control.cancelled'])
    await new Promise((r) => setTimeout(r, 2300))
    const later = await t.request('GET', `/v1/runs/${run.run_id}`, { token })
    expect(later.body.status).toBe('cancelled')
    expect(later.body.plan).toEqual(cancelled.body.plan)
    expect(later.body.plan.steps_completed).toBe(0)
    expect(later.body.outcome.results).toEqual([])
    expect(await traceOf(t, token, run.run_id)).toEqual(atCancel)
  })

  it('denies a call the key lacks scopes for, with the spec policy_denied detail and events', async () => {
    await registerTool(t, token, { name: 'payments', required_scopes: ['payments:write'] })
    const narrow = await t.createKey({ scopes: ['agents:write', 'runs:write', 'runs:read', 'tools:read'] })
    const agent = await createAgent(t, narrow.token, 'autonomous', [])
    // Tools live in the key's workspace; register the same tool there.
    const admin = (await t.createKey({ workspace: narrow.workspace })).token
    await registerTool(t, admin, { name: 'payments', required_scopes: ['payments:write'] })
    const run = await startRun(t, narrow.token, agent, { inputs: { plan: ['payments'] } })
    const done = await waitForRun(t, narrow.token, run.run_id, status('failed'))
    expect(done.outcome.error.code).toBe('policy_denied')
    expect(done.outcome.error.detail).toEqual({
      envelope: 'default',
      violation: 'missing_scope',
      observed: ['payments:write'],
      limit: ['payments:write'],
      escalation_queue: 'ops-review',
    })
    const frames = await traceOf(t, narrow.token, run.run_id)
    expect(frames.find((f) => f.kind === 'policy.decision')?.policy).toBe('deny')
    const events = await t.services.events.readWorkspace(narrow.workspace_id, 0, 100)
    const kinds = events.filter((e) => e.subjectId === run.run_id).map((e) => e.kind)
    expect(kinds).toEqual(['run.started', 'policy.denied', 'run.failed'])
  })

  it('refuses a plan longer than the envelope allows with 403 policy_denied at start', async () => {
    const agent = await createAgent(t, token, 'autonomous', [], 'restricted')
    const res = await t.request('POST', `/v1/agents/${agent}/runs`, {
      token,
      body: { inputs: { plan: Array(11).fill('search') } },
    })
    expect(res.status).toBe(403)
    expect(res.body.error.detail).toMatchObject({
      envelope: 'restricted',
      violation: 'max_steps',
      observed: 11,
      limit: 10,
    })
    const tooMany = await startRun(t, token, agent, {
      inputs: { plan: ['search', 'search', 'search', 'search'] },
    })
    const done = await waitForRun(t, token, tooMany.run_id, status('failed'))
    expect(done.outcome.error.detail).toMatchObject({ violation: 'max_tool_calls', observed: 4, limit: 3 })
    expect(done.plan.steps_completed).toBe(4)
  })

  it('assigning a task starts its run and the task follows it', async () => {
    const agent = await createAgent(t, token, 'autonomous', ['search'])
    const task = await t.request('POST', `/v1/agents/${agent}/tasks`, {
      token,
      body: { description: 'find things', priority: 5 },
    })
    expect(task.status).toBe(201)
    expect(task.body.run_id).toMatch(/^run_/)
    await waitForRun(t, token, task.body.run_id, status('succeeded'))
    const after = await t.request('GET', `/v1/tasks/${task.body.task_id}`, { token })
    expect(after.body.status).toBe('succeeded')
    expect(after.body.result.status).toBe('succeeded')
    const run = await t.request('GET', `/v1/runs/${task.body.run_id}`, { token })
    expect(run.body).toMatchObject({
      task_id: task.body.task_id,
      priority: 5,
      inputs: { task: 'find things' },
    })
  })

  it('keeps retired tools resolvable by id in old traces and fails queued steps that need them', async () => {
    const toolId = await registerTool(t, token, { name: 'ephemeral' })
    const agent = await createAgent(t, token, 'autonomous', ['ephemeral'])
    const run = await startRun(t, token, agent)
    await waitForRun(t, token, run.run_id, status('succeeded'))
    expect((await t.request('DELETE', `/v1/tools/${toolId}`, { token })).status).toBe(200)
    const frames = await traceOf(t, token, run.run_id)
    const call = frames.find((f) => f.kind === 'tool.call')
    expect(call.tool_id).toBe(toolId)
    const tool = await t.request('GET', `/v1/tools/${call.tool_id}`, { token })
    expect(tool.body).toMatchObject({ name: 'ephemeral', status: 'retired' })
    const later = await t.request('POST', `/v1/agents/${agent}/runs`, {
      token,
      body: { inputs: { plan: ['ephemeral'] } },
    })
    expect(later.status).toBe(400)
  })

  it('deleting an agent cancels its runs', async () => {
    const agent = await createAgent(t, token, 'supervised', ['search'])
    const run = await startRun(t, token, agent)
    await waitForRun(t, token, run.run_id, status('awaiting_approval'))
    expect((await t.request('DELETE', `/v1/agents/${agent}`, { token })).status).toBe(204)
    const after = await t.request('GET', `/v1/runs/${run.run_id}`, { token })
    expect(after.body.status).toBe('cancelled')
    expect(after.body.outcome.error.code).toBe('agent_deleted')
  })

  it('the agents list shows each agent its own active-run count (one count query for the page)', async () => {
    const own = (await t.createKey()).token
    await registerTool(t, own, { name: 'search' })
    const busy = await createAgent(t, own, 'supervised', ['search'])
    const idle = await createAgent(t, own, 'supervised', ['search'])
    const runs = [await startRun(t, own, busy), await startRun(t, own, busy)]
    for (const r of runs) await waitForRun(t, own, r.run_id, status('awaiting_approval'))
    const listed = async () => {
      const res = await t.request('GET', '/v1/agents', { token: own })
      expect(res.status).toBe(200)
      const data: { agent_id: string; active_runs: number; status: string }[] = res.body.data
      return new Map(data.map((a) => [a.agent_id, a]))
    }
    let agents = await listed()
    expect(agents.get(busy)).toMatchObject({ active_runs: 2, status: 'running' })
    expect(agents.get(idle)).toMatchObject({ active_runs: 0, status: 'idle' })
    expect((await t.request('POST', `/v1/runs/${runs[0].run_id}/cancel`, { token: own })).status).toBe(200)
    agents = await listed()
    expect(agents.get(busy)).toMatchObject({ active_runs: 1, status: 'running' })
    expect(agents.get(idle)).toMatchObject({ active_runs: 0, status: 'idle' })
  })

  it('lists an agent runs with paging, and hides other workspaces runs behind the same 404', async () => {
    const agent = await createAgent(t, token, 'autonomous', [])
    const ids = []
    for (let i = 0; i < 3; i++) ids.push((await startRun(t, token, agent)).run_id)
    const first = await t.request('GET', `/v1/agents/${agent}/runs?limit=2`, { token })
    const second = await t.request(
      'GET',
      `/v1/agents/${agent}/runs?limit=2&cursor=${first.body.next_cursor}`,
      { token },
    )
    expect([...first.body.data, ...second.body.data].map((r: { run_id: string }) => r.run_id)).toEqual(ids)
    expect(second.body.next_cursor).toBeNull()
    const other = (await t.createKey()).token
    const missing = await t.request('GET', '/v1/runs/run_00000000000000000000000000', { token: other })
    const foreign = await t.request('GET', `/v1/runs/${ids[0]}`, { token: other })
    expect(foreign.status).toBe(404)
    expect(foreign.body.error.code).toBe(missing.body.error.code)
    expect(foreign.body.error.message).toBe(missing.body.error.message)
    for (const path of [`/v1/runs/${ids[0]}/trace`, `/v1/agents/${agent}/runs`]) {
      expect((await t.request('GET', path, { token: other })).status).toBe(404)
    }
    expect((await t.request('POST', `/v1/runs/${ids[0]}/cancel`, { token: other })).status).toBe(404)
  })
})
