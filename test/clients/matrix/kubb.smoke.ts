// Smoke program for kubb (@kubb/plugin-client's fetch client): typechecked strict and run by
// test/clients/matrix.test.ts. The client sends Content-Type because the contract lists the JSON bodies under
// `application/json; charset=utf-8` too; it resolves with the body whatever the status.

import type { Run } from './kubb/index.js'
import { createAgent, getRun, getRunTrace, registerTool, startRun } from './kubb/index.js'

const TERMINAL = ['succeeded', 'failed', 'cancelled']

/** The error code of an answer that is the error envelope. */
function errorCode(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || !('error' in body)) return undefined
  const error: unknown = body.error
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined
}

export async function smoke(baseUrl: string, token: string) {
  const config = { baseURL: baseUrl, headers: { authorization: `Bearer ${token}` } }
  const tool = await registerTool(
    {
      name: 'search',
      provider: 'builtin:echo',
      policy_binding: { envelope: 'default', required_scopes: [] },
    },
    undefined,
    config,
  )
  if (errorCode(tool)) throw new Error(`tool: ${errorCode(tool)}`)
  const agent = await createAgent(
    { name: 'researcher', behavior: 'autonomous', capabilities: ['search'] },
    undefined,
    config,
  )
  if (errorCode(agent)) throw new Error(`agent: ${errorCode(agent)}`)
  const headers = { 'Idempotency-Key': `smoke-${Date.now()}` }
  let run: Run = await startRun(agent.agent_id, {}, headers, config)
  if (errorCode(run)) throw new Error(`start: ${errorCode(run)}`)
  for (let i = 0; i < 200 && !TERMINAL.includes(run.status); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    run = await getRun(run.run_id, config)
  }
  const seqs: number[] = []
  let cursor: string | undefined
  for (let i = 0; i < 100; i++) {
    const page = await getRunTrace(run.run_id, { limit: 2, ...(cursor ? { cursor } : {}) }, config)
    for (const frame of page.data) seqs.push(frame.seq)
    if (page.next_cursor === null) break
    cursor = page.next_cursor
  }
  return {
    status: run.status,
    seqs,
    notFound: errorCode(await getRun('run_missing', config)),
    conflict: errorCode(await startRun(agent.agent_id, { mode: 'dry_run' }, headers, config)),
  }
}
