// Smoke program for @hey-api/openapi-ts (client-fetch): typechecked strict and run by test/clients/matrix.test.ts.
import { createClient } from './hey/client/index.js'
import { createAgent, getRun, getRunTrace, registerTool, startRun } from './hey/sdk.gen.js'
import type { ErrorResponse, Run } from './hey/types.gen.js'

const TERMINAL = ['succeeded', 'failed', 'cancelled']

export async function smoke(baseUrl: string, token: string) {
  const client = createClient({ baseUrl, auth: token })
  const tool = await registerTool({
    client,
    body: {
      name: 'search',
      provider: 'builtin:echo',
      policy_binding: { envelope: 'default', required_scopes: [] },
    },
  })
  if (!tool.data) throw new Error(`tool: ${tool.error?.error.code}`)
  const agent = await createAgent({
    client,
    body: { name: 'researcher', behavior: 'autonomous', capabilities: ['search'] },
  })
  if (!agent.data) throw new Error(`agent: ${agent.error?.error.code}`)
  const agentId: string = agent.data.agent_id
  const key = `smoke-${Date.now()}`
  const started = await startRun({
    client,
    path: { agent_id: agentId },
    headers: { 'Idempotency-Key': key },
    body: {},
  })
  if (!started.data) throw new Error(`start: ${started.error?.error.code}`)
  let run: Run = started.data
  for (let i = 0; i < 200 && !TERMINAL.includes(run.status); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    const polled = await getRun({ client, path: { run_id: run.run_id } })
    if (!polled.data) throw new Error(`poll: ${polled.error?.error.code}`)
    run = polled.data
  }
  const seqs: number[] = []
  let cursor: string | undefined
  for (let i = 0; i < 100; i++) {
    const page = await getRunTrace({
      client,
      path: { run_id: run.run_id },
      query: { limit: 2, ...(cursor ? { cursor } : {}) },
    })
    if (!page.data) throw new Error(`trace: ${page.error?.error.code}`)
    for (const frame of page.data.data) seqs.push(frame.seq)
    if (page.data.next_cursor === null) break
    cursor = page.data.next_cursor
  }
  const missing = await getRun({ client, path: { run_id: 'run_missing' } })
  const missingError: ErrorResponse | undefined = missing.error
  const reused = await startRun({
    client,
    path: { agent_id: agentId },
    headers: { 'Idempotency-Key': key },
    body: { mode: 'dry_run' },
  })
  return {
    status: run.status,
    seqs,
    notFound: missing.response.status === 404 ? missingError?.error.code : undefined,
    conflict: reused.response.status === 409 ? reused.error?.error.code : undefined,
  }
}
