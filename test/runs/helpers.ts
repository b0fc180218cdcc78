import { expect } from 'vitest'
import type { TestServer } from '../support/server.js'

// biome-ignore lint/suspicious/noExplicitAny: run bodies are checked against the contract by the request helper
type Json = any

export interface ToolSpec {
  name: string
  provider?: string
  config?: Record<string, unknown>
  idempotent?: boolean
  envelope?: string
  required_scopes?: string[]
  output_schema?: Record<string, unknown>
}

export async function registerTool(t: TestServer, token: string, spec: ToolSpec): Promise<string> {
  const res = await t.request('POST', '/v1/tools', {
    token,
    body: {
      name: spec.name,
      provider: spec.provider ?? 'builtin:echo',
      config: spec.config ?? {},
      idempotent: spec.idempotent ?? true,
      output_schema: spec.output_schema ?? {},
      policy_binding: { envelope: spec.envelope ?? 'default', required_scopes: spec.required_scopes ?? [] },
    },
  })
  expect(res.status, res.text).toBe(201)
  return res.body.tool_id
}

export async function createAgent(
  t: TestServer,
  token: string,
  behavior: 'autonomous' | 'supervised' | 'hybrid',
  capabilities: string[],
  envelope?: string,
): Promise<string> {
  const res = await t.request('POST', '/v1/agents', {
    token,
    body: {
      name: `agent-${behavior}`,
      behavior,
      capabilities,
      ...(envelope ? { policy_envelope: envelope } : {}),
    },
  })
  expect(res.status, res.text).toBe(201)
  return res.body.agent_id
}
export async function startRun(
  t: TestServer,
  token: string,
  agentId: string,
  body: Record<string, unknown> = {},
): Promise<Json> {
  const res = await t.request('POST', `/v1/agents/${agentId}/runs`, { token, body })
  expect(res.status, res.text).toBe(201)
  return res.body
}

/** Polls the run until `done(run)` holds; bounded, so a broken runtime fails the test instead of hanging it. */
export async function waitForRun(
  t: TestServer,
  token: string,
  runId: string,
  done: (run: Json) => boolean,
  timeoutMs = 8000,
): Promise<Json> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    const res = await t.request('GET', `/v1/runs/${runId}`, { token })
    last = res.body
    if (done(res.body)) return res.body
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`run ${runId} did not reach the expected state: ${JSON.stringify(last)}`)
}

export const status = (s: string) => (run: { status: string }) => run.status === s
export async function traceOf(t: TestServer, token: string, runId: string): Promise<Json[]> {
  const frames: unknown[] = []
  let cursor: string | null = null
  for (let i = 0; i < 100; i++) {
    const q: string = cursor ? `?limit=3&cursor=${cursor}` : '?limit=3'
    const res = await t.request('GET', `/v1/runs/${runId}/trace${q}`, { token })
    expect(res.status).toBe(200)
    frames.push(...res.body.data)
    if (res.body.data.length === 0 || res.body.next_cursor === null) break
    cursor = res.body.next_cursor
  }
  return frames as Json[]
}

/** The plan counts the trace implies; the run's `plan` must always equal them. */
export function countsFromTrace(frames: Json[], total: number) {
  const completed = frames.filter((f) => f.kind === 'tool.call' || f.kind === 'step.failed').length
  return {
    steps_total: total,
    steps_completed: completed,
    steps_pending: total - completed,
    steps_escalated: frames.filter((f) => f.kind === 'approval.requested').length,
  }
}
