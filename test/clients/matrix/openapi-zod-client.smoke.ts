// Smoke program for openapi-zod-client (a Zodios client; every request and response is parsed by the generated zod
// schemas): typechecked strict and run by test/clients/matrix.test.ts. Zodios throws on a non-2xx answer.
import { createApiClient } from './zod/api.js'

const TERMINAL = ['succeeded', 'failed', 'cancelled']

/** The error code carried by a thrown (axios) error whose body is the error envelope. */
function errorCode(thrown: unknown): string | undefined {
  if (typeof thrown !== 'object' || thrown === null || !('response' in thrown)) return undefined
  const response: unknown = thrown.response
  if (typeof response !== 'object' || response === null || !('data' in response)) return undefined
  const body: unknown = response.data
  if (typeof body !== 'object' || body === null || !('error' in body)) return undefined
  const error: unknown = body.error
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined
}

export async function smoke(baseUrl: string, token: string) {
  const client = createApiClient(baseUrl, { axiosConfig: { headers: { authorization: `Bearer ${token}` } } })
  await client.registerTool({
    name: 'search',
    provider: 'builtin:echo',
    policy_binding: { envelope: 'default', required_scopes: [] },
  })
  const agent = await client.createAgent({
    name: 'researcher',
    behavior: 'autonomous',
    capabilities: ['search'],
  })
  const agentId = agent.agent_id
  const headers = { 'Idempotency-Key': `smoke-${Date.now()}` }
  let run = await client.startRun({}, { params: { agent_id: agentId }, headers })
  for (let i = 0; i < 200 && !TERMINAL.includes(run.status); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    run = await client.getRun({ params: { run_id: run.run_id } })
  }
  const seqs: number[] = []
  let cursor: string | undefined
  for (let i = 0; i < 100; i++) {
    const page = await client.getRunTrace({
      params: { run_id: run.run_id },
      queries: { limit: 2, ...(cursor ? { cursor } : {}) },
    })
    for (const frame of page.data) seqs.push(frame.seq)
    if (page.next_cursor === null) break
    cursor = page.next_cursor
  }
  const notFound = await client.getRun({ params: { run_id: 'run_missing' } }).then(() => undefined, errorCode)
  const conflict = await client
    .startRun({ mode: 'dry_run' }, { params: { agent_id: agentId }, headers })
    .then(() => undefined, errorCode)
  return { status: run.status, seqs, notFound, conflict }
}
