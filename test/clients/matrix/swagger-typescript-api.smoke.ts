// Smoke program for swagger-typescript-api (its fetch client): typechecked strict and run by
// test/clients/matrix.test.ts. Its methods resolve with the response on 2xx and throw it otherwise; enums are
// TypeScript enums (RunMode.DryRun).
import { Api, type ErrorResponse, type HttpResponse, type Run, RunMode } from './sta/api.js'

const TERMINAL = ['succeeded', 'failed', 'cancelled']

/** The error code of a thrown non-2xx answer. */
async function errorCode(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call
    return undefined
  } catch (thrown) {
    const response = thrown as HttpResponse<unknown, ErrorResponse>
    return String(response.error.error.code)
  }
}

export async function smoke(baseUrl: string, token: string) {
  const api = new Api({ baseUrl, baseApiParams: { headers: { authorization: `Bearer ${token}` } } })
  await api.v1.registerTool({
    name: 'search',
    provider: 'builtin:echo',
    policy_binding: { envelope: 'default', required_scopes: [] },
  })
  const agent = await api.v1.createAgent({
    name: 'researcher',
    behavior: 'autonomous',
    capabilities: ['search'],
  })
  const agentId = agent.data.agent_id
  const withKey = { headers: { authorization: `Bearer ${token}`, 'Idempotency-Key': `smoke-${Date.now()}` } }
  let run: Run = (await api.v1.startRun(agentId, {}, withKey)).data
  for (let i = 0; i < 200 && !TERMINAL.includes(run.status); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    run = (await api.v1.getRun(run.run_id)).data
  }
  const seqs: number[] = []
  let cursor: string | undefined
  for (let i = 0; i < 100; i++) {
    const page = (await api.v1.getRunTrace(run.run_id, { limit: 2, ...(cursor ? { cursor } : {}) })).data
    for (const frame of page.data) seqs.push(frame.seq)
    if (page.next_cursor === null) break
    cursor = page.next_cursor
  }
  return {
    status: run.status,
    seqs,
    notFound: await errorCode(api.v1.getRun('run_missing')),
    conflict: await errorCode(api.v1.startRun(agentId, { mode: RunMode.DryRun }, withKey)),
  }
}
