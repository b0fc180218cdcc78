// Smoke program for oazapfts (its fetch runtime): typechecked strict and run by test/clients/matrix.test.ts.
import * as api from './oazapfts/api.js'

const TERMINAL = ['succeeded', 'failed', 'cancelled']

export async function smoke(baseUrl: string, token: string) {
  const opts = { baseUrl, headers: { authorization: `Bearer ${token}` } }
  const tool = await api.registerTool(
    {
      name: 'search',
      provider: 'builtin:echo',
      policy_binding: { envelope: 'default', required_scopes: [] },
    },
    {},
    opts,
  )
  if (tool.status !== 201) throw new Error(`tool: ${tool.status}`)
  const agent = await api.createAgent(
    { name: 'researcher', behavior: 'autonomous', capabilities: ['search'] },
    {},
    opts,
  )
  if (agent.status !== 201) throw new Error(`agent: ${agent.status}`)
  const agentId = agent.data.agent_id
  const idempotencyKey = `smoke-${Date.now()}`
  const started = await api.startRun(agentId, {}, { idempotencyKey }, opts)
  if (started.status !== 201) throw new Error(`start: ${started.status}`)
  let run: api.Run = started.data
  for (let i = 0; i < 200 && !TERMINAL.includes(run.status); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    const polled = await api.getRun(run.run_id, opts)
    if (polled.status !== 200) throw new Error(`poll: ${polled.status}`)
    run = polled.data
  }
  const seqs: number[] = []
  let cursor: string | undefined
  for (let i = 0; i < 100; i++) {
    const page = await api.getRunTrace(run.run_id, { limit: 2, ...(cursor ? { cursor } : {}) }, opts)
    if (page.status !== 200) throw new Error(`trace: ${page.status}`)
    for (const frame of page.data.data) seqs.push(frame.seq)
    if (page.data.next_cursor === null) break
    cursor = page.data.next_cursor
  }
  const missing = await api.getRun('run_missing', opts)
  const reused = await api.startRun(agentId, { mode: 'dry_run' }, { idempotencyKey }, opts)
  return {
    status: run.status,
    seqs,
    notFound: missing.status === 404 ? String(missing.data.error.code) : undefined,
    conflict: reused.status === 409 ? String(reused.data.error.code) : undefined,
  }
}
