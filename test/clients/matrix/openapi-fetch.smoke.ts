// Smoke program for openapi-typescript (the README's command) + openapi-fetch: typechecked strict and run by
// test/clients/matrix.test.ts against the reference server. Minimal bodies must typecheck.
import createClient from 'openapi-fetch'
import type { components, paths } from './api.js'

type Run = components['schemas']['Run']
const TERMINAL = ['succeeded', 'failed', 'cancelled']

export async function smoke(baseUrl: string, token: string) {
  const client = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` } })
  const tool = await client.POST('/v1/tools', {
    body: {
      name: 'search',
      provider: 'builtin:echo',
      policy_binding: { envelope: 'default', required_scopes: [] },
    },
  })
  if (!tool.data) throw new Error(`tool: ${tool.error.error.code}`)
  const agent = await client.POST('/v1/agents', {
    body: { name: 'researcher', behavior: 'autonomous', capabilities: [tool.data.name] },
  })
  if (!agent.data) throw new Error(`agent: ${agent.error.error.code}`)
  const agentId: string = agent.data.agent_id
  const key = `smoke-${Date.now()}`
  const started = await client.POST('/v1/agents/{agent_id}/runs', {
    params: { path: { agent_id: agentId }, header: { 'Idempotency-Key': key } },
    body: {},
  })
  if (!started.data) throw new Error(`start: ${started.error.error.code}`)
  let run: Run = started.data
  for (let i = 0; i < 200 && !TERMINAL.includes(run.status); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    const polled = await client.GET('/v1/runs/{run_id}', { params: { path: { run_id: run.run_id } } })
    if (!polled.data) throw new Error(`poll: ${polled.error.error.code}`)
    run = polled.data
  }
  const seqs: number[] = []
  let cursor: string | undefined
  for (let i = 0; i < 100; i++) {
    const page = await client.GET('/v1/runs/{run_id}/trace', {
      params: { path: { run_id: run.run_id }, query: { limit: 2, ...(cursor ? { cursor } : {}) } },
    })
    if (!page.data) throw new Error(`trace: ${page.error.error.code}`)
    for (const frame of page.data.data) seqs.push(frame.seq)
    if (page.data.next_cursor === null) break
    cursor = page.data.next_cursor
  }
  const missing = await client.GET('/v1/runs/{run_id}', { params: { path: { run_id: 'run_missing' } } })
  const notFound: string | undefined = missing.response.status === 404 ? missing.error?.error.code : undefined
  const reused = await client.POST('/v1/agents/{agent_id}/runs', {
    params: { path: { agent_id: agentId }, header: { 'Idempotency-Key': key } },
    body: { mode: 'dry_run' },
  })
  const conflict: string | undefined = reused.response.status === 409 ? reused.error?.error.code : undefined
  return { status: run.status, seqs, notFound, conflict }
}
