// Smoke program for orval (fetch client): typechecked strict and run by test/clients/matrix.test.ts.
import { createAgent, getRun, getRunTrace, type Run, registerTool, startRun } from './orval/api.js'

const TERMINAL = ['succeeded', 'failed', 'cancelled']

export async function smoke(_baseUrl: string, token: string) {
  const auth = { headers: { authorization: `Bearer ${token}` } }
  const tool = await registerTool(
    {
      name: 'search',
      provider: 'builtin:echo',
      policy_binding: { envelope: 'default', required_scopes: [] },
    },
    auth,
  )
  if (tool.status !== 201) throw new Error(`tool: ${tool.data.error.code}`)
  const agent = await createAgent(
    { name: 'researcher', behavior: 'autonomous', capabilities: ['search'] },
    auth,
  )
  if (agent.status !== 201) throw new Error(`agent: ${agent.data.error.code}`)
  const agentId: string = agent.data.agent_id
  const key = `smoke-${Date.now()}`
  const withKey = { headers: { ...auth.headers, 'Idempotency-Key': key } }
  const started = await startRun(agentId, {}, withKey)
  if (started.status !== 201) throw new Error(`start: ${started.data.error.code}`)
  let run: Run = started.data
  for (let i = 0; i < 200 && !TERMINAL.includes(run.status); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    const polled = await getRun(run.run_id, auth)
    if (polled.status !== 200) throw new Error(`poll: ${polled.data.error.code}`)
    run = polled.data
  }
  const seqs: number[] = []
  let cursor: string | undefined
  for (let i = 0; i < 100; i++) {
    const page = await getRunTrace(run.run_id, { limit: 2, ...(cursor ? { cursor } : {}) }, auth)
    if (page.status !== 200) throw new Error(`trace: ${page.data.error.code}`)
    for (const frame of page.data.data) seqs.push(frame.seq)
    if (page.data.next_cursor === null) break
    cursor = page.data.next_cursor
  }
  const missing = await getRun('run_missing', auth)
  const reused = await startRun(agentId, { mode: 'dry_run' }, withKey)
  return {
    status: run.status,
    seqs,
    notFound: missing.status === 404 ? missing.data.error.code : undefined,
    conflict: reused.status === 409 ? reused.data.error.code : undefined,
  }
}
