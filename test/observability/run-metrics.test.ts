/**
 * The run metrics against runs in known states: `agentops_runs` by status (queued, running, awaiting approval) as
 * exact figures, policy decisions by kind, and run durations by outcome, each moved through the API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAgent, registerTool, startRun, status, traceOf, waitForRun } from '../runs/helpers.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { optionalSeriesValue, type Series, scrape, seriesValue } from './helpers.js'

/** How long the `slow` tool holds the one run slot: the window in which a run is running and another queued. */
const SLOW_MS = 2_000

function runs(series: Series[]) {
  return {
    queued: seriesValue(series, 'agentops_runs', { status: 'queued' }),
    running: seriesValue(series, 'agentops_runs', { status: 'running' }),
    awaiting_approval: seriesValue(series, 'agentops_runs', { status: 'awaiting_approval' }),
  }
}

function decisions(series: Series[]) {
  const decision = (d: string) => seriesValue(series, 'agentops_policy_decisions_total', { decision: d })
  return { allow: decision('allow'), escalate: decision('escalate'), deny: decision('deny') }
}

/** Run durations observed by outcome: the histogram binds an outcome's series on its first observation. */
function durations(series: Series[]) {
  const count = (outcome: string) =>
    optionalSeriesValue(series, 'agentops_run_duration_seconds_count', { outcome })
  return { succeeded: count('succeeded'), failed: count('failed'), cancelled: count('cancelled') }
}

describe('run metrics', () => {
  let t: TestServer
  let token: string
  let workspace: string
  beforeAll(async () => {
    // One run at a time: a run holding the slot keeps the next one queued.
    t = await startTestServer({ config: { runConcurrency: 1 } })
    const key = await t.createKey()
    token = key.token
    workspace = key.workspace
    await registerTool(t, token, { name: 'lookup' })
    // Bound to the `gated` envelope, which requires approval: every call escalates (test/runs/lifecycle's way).
    await registerTool(t, token, { name: 'wire', envelope: 'gated' })
    await registerTool(t, token, { name: 'slow', provider: 'builtin:delay', config: { delay_ms: SLOW_MS } })
    await registerTool(t, token, { name: 'vault', required_scopes: ['vault:open'] })
  })
  afterAll(() => t?.close())

  it('shows runs by status exactly, and counts decisions and durations by kind as runs move', async () => {
    const fresh = (await scrape(t.baseUrl)).series
    expect(runs(fresh)).toEqual({ queued: 0, running: 0, awaiting_approval: 0 })
    expect(decisions(fresh)).toEqual({ allow: 0, escalate: 0, deny: 0 })
    expect(durations(fresh)).toEqual({ succeeded: 0, failed: 0, cancelled: 0 })

    // Two runs waiting for approval: the tool's policy binding escalates.
    const gated = await createAgent(t, token, 'autonomous', ['wire'])
    const approved = await startRun(t, token, gated)
    const rejected = await startRun(t, token, gated)
    for (const r of [approved, rejected]) await waitForRun(t, token, r.run_id, status('awaiting_approval'))

    // One run in its slow step (running, holding the one slot), one queued behind it.
    const slow = await createAgent(t, token, 'autonomous', ['slow'])
    const busy = await startRun(t, token, slow)
    const heldFrom = Date.now()
    await waitForRun(t, token, busy.run_id, status('running'))
    const plain = await createAgent(t, token, 'autonomous', ['lookup'])
    const queued = await startRun(t, token, plain)
    const during = (await scrape(t.baseUrl)).series
    // Only meaningful while the slow step still holds the slot.
    expect((await t.request('GET', `/v1/runs/${queued.run_id}`, { token })).body.status).toBe('queued')
    expect(Date.now() - heldFrom).toBeLessThan(SLOW_MS)
    expect(runs(during)).toEqual({ queued: 1, running: 1, awaiting_approval: 2 })
    expect(decisions(during)).toEqual({ allow: 1, escalate: 2, deny: 0 })

    // Cancelled while queued and while running; approved; rejected; denied for a scope the key lacks.
    for (const r of [queued, busy]) {
      const res = await t.request('POST', `/v1/runs/${r.run_id}/cancel`, { token })
      expect(res.body.status, res.text).toBe('cancelled')
    }
    const decide = (runId: string, decision: string) =>
      t.request('POST', `/v1/runs/${runId}/steps/step_1/approval`, { token, body: { decision } })
    expect((await decide(approved.run_id, 'approve')).status).toBe(200)
    expect((await decide(rejected.run_id, 'reject')).body.status).toBe('failed')
    const narrow = await t.createKey({ workspace, scopes: ['agents:write', 'runs:write', 'runs:read'] })
    const guarded = await createAgent(t, narrow.token, 'autonomous', ['vault'])
    const denied = await startRun(t, narrow.token, guarded)
    await waitForRun(t, token, approved.run_id, status('succeeded'))
    const deniedRun = await waitForRun(t, token, denied.run_id, status('failed'))
    expect(deniedRun.outcome.error.code).toBe('policy_denied')

    const after = (await scrape(t.baseUrl)).series
    expect(runs(after)).toEqual({ queued: 0, running: 0, awaiting_approval: 0 })
    expect(durations(after)).toEqual({ succeeded: 1, failed: 2, cancelled: 2 })
    expect(decisions(after)).toEqual({ allow: 2, escalate: 2, deny: 1 })
    // The same decisions as the runs' traces record.
    const frames = []
    for (const r of [approved, rejected, busy, queued, denied])
      frames.push(...(await traceOf(t, token, r.run_id)))
    const traced = { allow: 0, escalate: 0, deny: 0 }
    for (const f of frames) if (f.kind === 'policy.decision') traced[f.policy as keyof typeof traced]++
    expect(decisions(after)).toEqual(traced)
    // Claimed from the queue: the two gated runs, the slow one and the denied one (the cancelled one never was).
    expect(seriesValue(after, 'agentops_run_claim_latency_seconds_count')).toBe(4)
  })
})
