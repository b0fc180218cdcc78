import { parseSeries } from '../observability/helpers.js'
import type { TestResponse, TestServer } from '../support/server.js'

// biome-ignore lint/suspicious/noExplicitAny: tests read GraphQL results freely
export type Gql = TestResponse<any>

/** POST /v1/graphql with a bearer token; the response is checked against the contract like every test request. */
export function gql(
  t: TestServer,
  token: string | undefined,
  query: string,
  variables?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Gql> {
  return t.request('POST', '/v1/graphql', {
    token,
    body: variables ? { query, variables } : { query },
    headers,
  })
}

/** Registers an echo tool and an agent that plans with it; returns the agent id. */
export async function agentWithTool(t: TestServer, token: string, name = 'echo'): Promise<string> {
  await t.request('POST', '/v1/tools', {
    token,
    body: {
      name,
      provider: 'builtin:echo',
      idempotent: true,
      policy_binding: { envelope: 'default', required_scopes: [] },
    },
  })
  const agent = await t.request('POST', '/v1/agents', {
    token,
    body: { name: 'researcher', behavior: 'autonomous', capabilities: [name] },
  })
  return agent.body.agent_id as string
}

/** One series of the server's `/metrics` (label subset match), or undefined when the scrape has none. */
export async function metricValue(
  t: TestServer,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
  const res = await fetch(`${t.baseUrl}/metrics`)
  const hit = parseSeries(await res.text()).find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )
  return hit?.value
}
