import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'
import { agentWithTool, gql } from './helpers.js'

let t: TestServer
let token: string
let other: string

beforeAll(async () => {
  t = await startTestServer()
  token = (await t.createKey({ scopes: ['*'] })).token
  other = (await t.createKey({ scopes: ['*'] })).token
})
afterAll(() => t.close())

const RUN_FIELDS = `run_id agent_id task_id status mode trace_level inputs policy_envelope priority trace_url
  created_at started_at finished_at plan { steps_total steps_completed steps_pending steps_escalated }
  awaiting { step_id queue reason requested_at } trace_cursor
  outcome { status results { step_id tool tool_id result } error { code message detail } }`

describe('queries answer what REST answers', () => {
  it('a run with its agent and trace in one round trip, field for field equal to REST', async () => {
    const agentId = await agentWithTool(t, token)
    const started = await t.request('POST', `/v1/agents/${agentId}/runs`, {
      token,
      body: { inputs: { q: 1 } },
    })
    const runId = started.body.run_id as string
    const res = await gql(
      t,
      token,
      `query($id: ID!) { run(id: $id) { ${RUN_FIELDS} agent { agent_id name behavior } trace(limit: 5) {
        data { seq ts step_id kind tool tool_id policy latency_ms result detail } next_cursor run_status } } }`,
      { id: runId },
    )
    expect(res.status).toBe(200)
    expect(res.body.errors).toBeUndefined()
    const rest = await t.request('GET', `/v1/runs/${runId}`, { token })
    const { agent, trace, ...run } = res.body.data.run
    // The run may move on between the two reads; the fields that cannot change must be equal.
    for (const key of [
      'run_id',
      'agent_id',
      'task_id',
      'mode',
      'trace_level',
      'inputs',
      'policy_envelope',
    ] as const) {
      expect(run[key]).toEqual(rest.body[key])
    }
    expect(Object.keys(run).sort()).toEqual(Object.keys(rest.body).sort())
    expect(agent).toMatchObject({ agent_id: agentId, name: 'researcher', behavior: 'autonomous' })
    expect(trace.data.length).toBeGreaterThan(0)
    expect(trace.data[0].kind).toBe('run.started')
  })

  it('agent(id) pages its runs with the REST cursor and limits', async () => {
    const agentId = await agentWithTool(t, token, 'echo2')
    for (let i = 0; i < 3; i++) await t.request('POST', `/v1/agents/${agentId}/runs`, { token, body: {} })
    const q = `query($id: ID!, $c: String) { agent(id: $id) { agent_id runs(limit: 2, cursor: $c) { data { run_id } next_cursor } } }`
    const first = await gql(t, token, q, { id: agentId })
    expect(first.body.data.agent.runs.data).toHaveLength(2)
    const restPage = await t.request('GET', `/v1/agents/${agentId}/runs?limit=2`, { token })
    expect(first.body.data.agent.runs.next_cursor).toBe(restPage.body.next_cursor)
    const second = await gql(t, token, q, { id: agentId, c: first.body.data.agent.runs.next_cursor })
    expect(second.body.data.agent.runs.data).toHaveLength(1)
    expect(second.body.data.agent.runs.next_cursor).toBeNull()
  })

  it('lists default to 50 and refuse limits outside 1..200 and foreign cursors like REST', async () => {
    const own = (await t.createKey({ scopes: ['*'] })).token
    for (let i = 0; i < 52; i++) {
      await t.request('POST', '/v1/agents', { token: own, body: { name: `a${i}`, behavior: 'hybrid' } })
    }
    const page = await gql(t, own, '{ agents { data { agent_id } next_cursor } }')
    expect(page.body.data.agents.data).toHaveLength(50)
    expect(page.body.data.agents.next_cursor).toEqual(expect.any(String))
    for (const limit of [0, 201]) {
      const bad = await gql(t, own, `{ agents(limit: ${limit}) { next_cursor } }`)
      const rest = await t.request('GET', `/v1/agents?limit=${limit}`, { token: own })
      expect(bad.status).toBe(200)
      expect(bad.body.data.agents).toBeNull()
      expect(bad.body.errors[0].extensions).toMatchObject({ code: 'invalid_request', status: 400 })
      expect(rest.body.error.code).toBe('invalid_request')
      expect(bad.body.errors[0].extensions.detail.fields).toEqual(rest.body.error.detail.fields)
    }
    // A cursor of the tools list (base64url of {"l":"tools","k":1}) does not page agents, as in REST.
    const toolsCursor = 'eyJsIjoidG9vbHMiLCJrIjoxfQ'
    const foreign = await gql(t, own, `{ agents(cursor: "${toolsCursor}") { next_cursor } }`)
    const rest = await t.request('GET', `/v1/agents?cursor=${toolsCursor}`, { token: own })
    expect(foreign.body.errors[0].extensions.code).toBe('invalid_cursor')
    expect(foreign.body.errors[0].message).toBe(rest.body.error.message)
  })

  it('tools, tool, webhooks with deliveries, task and records', async () => {
    const agentId = await agentWithTool(t, token, 'echo3')
    const tools = await gql(
      t,
      token,
      '{ tools(limit: 200) { data { tool_id name status policy_binding { envelope required_scopes } } } }',
    )
    const echo3 = tools.body.data.tools.data.find((x: { name: string }) => x.name === 'echo3')
    expect(echo3.status).toBe('active')
    const one = await gql(t, token, `{ tool(id: "${echo3.tool_id}") { tool_id name input_schema config } }`)
    expect(one.body.data.tool).toMatchObject({
      tool_id: echo3.tool_id,
      name: 'echo3',
      input_schema: {},
      config: {},
    })

    const task = await t.request('POST', `/v1/agents/${agentId}/tasks`, {
      token,
      body: { description: 'sum' },
    })
    const tq = await gql(
      t,
      token,
      `{ task(id: "${task.body.task_id}") { task_id description priority agent { agent_id } run { run_id } } }`,
    )
    expect(tq.body.data.task).toMatchObject({
      task_id: task.body.task_id,
      priority: 3,
      agent: { agent_id: agentId },
    })
    expect(tq.body.data.task.run.run_id).toBe(task.body.run_id)

    await t.request('POST', '/v1/webhooks', {
      token,
      body: { url: 'http://127.0.0.1:9/hook', events: ['run.started'], secret: 'whsec_abcdefgh' },
    })
    const hooks = await gql(
      t,
      token,
      '{ webhooks { data { webhook_id url events status deliveries { data { delivery_id } next_cursor } } } }',
    )
    expect(hooks.body.data.webhooks.data[0]).toMatchObject({ events: ['run.started'], status: 'active' })
    expect(hooks.body.data.webhooks.data[0].deliveries.next_cursor).toBeNull()

    await t.request('POST', '/v1/grid/connectors/crm/ingest', {
      token,
      body: {
        records: [
          { id: 'r1', ts: '2026-11-23T06:00:00Z', source: 's', policy_class: 'public', body: { a: 1 } },
        ],
      },
    })
    const recs = await gql(
      t,
      token,
      '{ records(connector_id: "crm") { data { id seq body lineage { batch_root leaf_index proof } } next_cursor } }',
    )
    const rest = await t.request('GET', '/v1/grid/connectors/crm/records', { token })
    expect(recs.body.data.records.data[0]).toMatchObject({ id: 'r1', seq: 1, body: { a: 1 } })
    expect(recs.body.data.records.data[0].lineage).toEqual({
      batch_root: rest.body.data[0].lineage.batch_root,
      leaf_index: 0,
      proof: rest.body.data[0].lineage.proof,
    })
  })
})

describe('mutations call the same services as REST', () => {
  it('creates an agent, registers and retires a tool, starts, pauses, resumes and cancels a run', async () => {
    const tool = await gql(
      t,
      token,
      `mutation { registerTool(input: { name: "m-echo", provider: "builtin:delay", config: { delay_ms: 5000 },
        policy_binding: { envelope: "default", required_scopes: [] } }) { tool_id name status idempotent } }`,
    )
    expect(tool.body.data.registerTool).toMatchObject({ name: 'm-echo', status: 'active', idempotent: false })
    const dup = await gql(
      t,
      token,
      `mutation { registerTool(input: { name: "m-echo", provider: "builtin:echo",
        policy_binding: { envelope: "default", required_scopes: [] } }) { tool_id } }`,
    )
    expect(dup.body.errors[0].extensions).toMatchObject({ code: 'already_exists', status: 409 })

    const agent = await gql(
      t,
      token,
      'mutation { createAgent(input: { name: "m", behavior: supervised, capabilities: ["m-echo"] }) { agent_id status active_runs } }',
    )
    const agentId = agent.body.data.createAgent.agent_id
    expect(agent.body.data.createAgent).toMatchObject({ status: 'idle', active_runs: 0 })

    const run = await gql(
      t,
      token,
      `mutation { startRun(agent_id: "${agentId}", input: { mode: live }) { run_id status trace_url } }`,
    )
    const runId = run.body.data.startRun.run_id
    expect(run.body.data.startRun.trace_url).toBe(`/v1/runs/${runId}/trace`)
    const paused = await gql(t, token, `mutation { pauseRun(id: "${runId}") { status } }`)
    expect(paused.body.data.pauseRun.status).toBe('paused')
    const resumed = await gql(t, token, `mutation { resumeRun(id: "${runId}") { status } }`)
    expect(resumed.body.data.resumeRun.status).not.toBe('paused')
    const cancelled = await gql(
      t,
      token,
      `mutation { cancelRun(id: "${runId}") { status outcome { status } } }`,
    )
    expect(cancelled.body.data.cancelRun).toEqual({ status: 'cancelled', outcome: { status: 'cancelled' } })
    const again = await gql(t, token, `mutation { cancelRun(id: "${runId}") { status } }`)
    expect(again.body.errors[0].extensions).toMatchObject({ code: 'invalid_state', status: 409 })
    expect(again.body.errors[0].extensions.detail.allowed_actions).toEqual([])

    const retired = await gql(
      t,
      token,
      `mutation { retireTool(id: "${tool.body.data.registerTool.tool_id}") { status retired_at } }`,
    )
    expect(retired.body.data.retireTool.status).toBe('retired')
  })

  it('assigns a task, approves a supervised step and subscribes a webhook', async () => {
    const agentId = await agentWithTool(t, token, 'appr')
    await t.request('POST', '/v1/agents', { token, body: { name: 'x', behavior: 'autonomous' } })
    const sup = await gql(
      t,
      token,
      'mutation { createAgent(input: { name: "s", behavior: supervised, capabilities: ["appr"] }) { agent_id } }',
    )
    const task = await gql(
      t,
      token,
      `mutation { assignTask(agent_id: "${sup.body.data.createAgent.agent_id}", input: { description: "d", priority: 5 }) { task_id run_id priority status } }`,
    )
    expect(task.body.data.assignTask).toMatchObject({ priority: 5 })
    const runId = task.body.data.assignTask.run_id
    let awaiting: { step_id: string }[] = []
    for (let i = 0; i < 100 && awaiting.length === 0; i++) {
      awaiting = (await t.request('GET', `/v1/runs/${runId}`, { token })).body.awaiting
      if (awaiting.length === 0) await new Promise((r) => setTimeout(r, 50))
    }
    expect(awaiting).toHaveLength(1)
    const decided = await gql(
      t,
      token,
      `mutation { decideApproval(run_id: "${runId}", step_id: "step_1", input: { decision: approve, comment: "ok" }) { status } }`,
    )
    expect(decided.body.errors).toBeUndefined()
    expect(['running', 'succeeded']).toContain(decided.body.data.decideApproval.status)

    const hook = await gql(
      t,
      token,
      'mutation { createWebhook(input: { url: "http://127.0.0.1:9/h", events: ["run.failed"], secret: "abcdefgh" }) { webhook_id events status } }',
    )
    expect(hook.body.data.createWebhook).toMatchObject({ events: ['run.failed'], status: 'active' })
    expect(agentId).toMatch(/^agt_/)
  })

  it('refuses invalid inputs with the same invalid_request detail as REST', async () => {
    const g = await gql(
      t,
      token,
      'mutation { createWebhook(input: { url: "ftp://x", events: ["nope"], secret: "short" }) { webhook_id } }',
    )
    const r = await t.request('POST', '/v1/webhooks', {
      token,
      body: { url: 'ftp://x', events: ['nope'], secret: 'short' },
    })
    expect(g.status).toBe(200)
    expect(g.body.data.createWebhook).toBeNull()
    expect(g.body.errors[0].extensions).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(g.body.errors[0].extensions.detail.fields).toEqual(r.body.error.detail.fields)
    expect(g.body.errors[0].message).toBe(r.body.error.message)
  })
  it.each([
    ['no event kind', { events: [] }],
    ['an event kind twice', { events: ['run.failed', 'run.failed'] }],
    ['an empty agent list', { agent_ids: [] }],
  ])('refuses a destination with %s as REST does, creating nothing', async (_what, change) => {
    const input = { type: 'cloudevents', name: 'n', config: { url: 'http://127.0.0.1:9/d' }, ...change }
    const g = await gql(
      t,
      token,
      'mutation($in: DestinationCreate!) { createDestination(input: $in) { destination_id } }',
      {
        in: input,
      },
    )
    const r = await t.request('POST', '/v1/destinations', { token, body: input })
    expect(r.status).toBe(400)
    expect(g.body.data?.createDestination ?? null).toBeNull()
    expect(g.body.errors[0].extensions).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(g.body.errors[0].extensions.detail.fields).toEqual(r.body.error.detail.fields)
  })
})

describe('same guarantees as REST', () => {
  it('401 without a token, with the envelope', async () => {
    const res = await gql(t, undefined, '{ agents { next_cursor } }')
    expect(res.status).toBe(401)
    expect(res.body.error.code).toBe('unauthenticated')
    expect(res.headers.get('www-authenticate')).toBe('Bearer')
  })

  it('a missing scope is policy_denied with the REST detail in extensions', async () => {
    const narrow = (await t.createKey({ scopes: ['agents:read'] })).token
    const g = await gql(
      t,
      narrow,
      'mutation { createAgent(input: { name: "n", behavior: hybrid }) { agent_id } }',
    )
    const r = await t.request('POST', '/v1/agents', {
      token: narrow,
      body: { name: 'n', behavior: 'hybrid' },
    })
    expect(g.body.data.createAgent).toBeNull()
    expect(g.body.errors[0].extensions).toMatchObject({ code: 'policy_denied', status: 403 })
    expect(g.body.errors[0].extensions.detail).toEqual(r.body.error.detail)
    expect(g.body.errors[0].extensions.detail).toEqual({
      envelope: 'api_key',
      violation: 'missing_scope',
      observed: ['agents:read'],
      limit: ['agents:write'],
      escalation_queue: 'workspace-admins',
    })
  })

  it('an id of another workspace reads exactly like a missing one', async () => {
    const agentId = await agentWithTool(t, token, 'ten')
    const runId = (await t.request('POST', `/v1/agents/${agentId}/runs`, { token, body: {} })).body.run_id
    const strip = (b: {
      data: unknown
      errors: { message: string; path: unknown; extensions: Record<string, unknown> }[]
    }) => ({
      data: b.data,
      errors: b.errors.map((e) => ({ ...e, extensions: { ...e.extensions, request_id: '' } })),
    })
    for (const [field, id, missing] of [
      ['run', runId, 'run_00000000000000000000000000'],
      ['agent', agentId, 'agt_00000000000000000000000000'],
    ]) {
      const foreign = await gql(t, other, `{ ${field}(id: "${id}") { __typename } }`)
      const absent = await gql(t, other, `{ ${field}(id: "${missing}") { __typename } }`)
      expect(foreign.body.data).toEqual({ [field as string]: null })
      expect(foreign.body.errors[0].extensions.code).toBe('not_found')
      expect(strip(foreign.body)).toEqual(strip(absent.body))
    }
  })

  it('counts every request against the workspace rate limit, with headers and 429', async () => {
    const key = await t.createKey({ tier: 'enterprise', limitPerHour: 3, burstLimit: 3 })
    const seen: number[] = []
    for (let i = 0; i < 4; i++) {
      const res = await gql(t, key.token, '{ agents { next_cursor } }')
      seen.push(res.status)
      expect(res.headers.get('ratelimit-policy')).toContain('hourly')
      if (res.status === 429) {
        expect(res.body.error.code).toBe('rate_limited')
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
      }
    }
    expect(seen).toEqual([200, 200, 200, 429])
  })

  it('Idempotency-Key: a replay answers the stored result, another body is 409, like REST', async () => {
    const headers = { 'Idempotency-Key': `gql-${Date.now()}` }
    const q = 'mutation { createAgent(input: { name: "idem", behavior: hybrid }) { agent_id } }'
    const first = await gql(t, token, q, undefined, headers)
    const replay = await gql(t, token, q, undefined, headers)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(replay.text).toBe(first.text)
    const list = await gql(t, token, '{ agents(limit: 200) { data { name } } }')
    expect(list.body.data.agents.data.filter((a: { name: string }) => a.name === 'idem')).toHaveLength(1)
    const reused = await gql(t, token, q.replace('idem', 'other'), undefined, headers)
    expect(reused.status).toBe(409)
    expect(reused.body.error.code).toBe('idempotency_key_reused')
  })
})

describe('bad input is a clear error, never a 500', () => {
  it.each([
    ['no query', { variables: {} }],
    ['query not a string', { query: 42 }],
    ['empty query', { query: '  ' }],
    ['variables not an object', { query: '{ agents { next_cursor } }', variables: [1] }],
    ['operationName not a string', { query: '{ agents { next_cursor } }', operationName: 3 }],
  ])('%s: the error envelope', async (_name, body) => {
    const res = await t.request('POST', '/v1/graphql', { token, body })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('invalid_request')
  })

  it.each([
    ['a syntax error', '{ agents { '],
    ['an unknown field', '{ agents { nope } }'],
    ['a wrong argument type', '{ agents(limit: "x") { next_cursor } }'],
    ['two anonymous operations', '{ agents { next_cursor } } { tools { next_cursor } }'],
  ])('%s: errors with code invalid_request and no data', async (_name, query) => {
    const res = await gql(t, token, query)
    expect(res.status).toBe(200)
    expect(res.body.data).toBeUndefined()
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(res.body.errors[0].message.length).toBeGreaterThan(0)
  })

  it('variables that do not fit their types: errors and no data', async () => {
    const res = await gql(t, token, 'query($id: ID!) { run(id: $id) { run_id } }', { id: { no: 1 } })
    expect(res.status).toBe(200)
    expect(res.body.data).toBeUndefined()
    expect(res.body.errors[0].extensions.code).toBe('invalid_request')
  })

  it('refuses a query nested too deep and one too costly before running it', async () => {
    const deep = await gql(
      t,
      token,
      '{ agents { data { runs { data { agent { runs { data { agent { runs { data { agent { runs { data { agent { name } } } } } } } } } } } } } } }',
    )
    expect(deep.status).toBe(200)
    expect(deep.body.data).toBeUndefined()
    expect(deep.body.errors[0].extensions.detail).toMatchObject({ limit: 'depth', max: 12 })
    const costly = await gql(
      t,
      token,
      '{ agents(limit: 200) { data { runs(limit: 200) { data { run_id } } } } }',
    )
    expect(costly.body.data).toBeUndefined()
    expect(costly.body.errors[0].extensions.detail).toMatchObject({
      limit: 'cost',
      observed: 80_400,
      max: 10_000,
    })
    const aliased = await gql(
      t,
      token,
      `{ ${Array.from({ length: 60 }, (_, i) => `a${i}: agents(limit: 200) { data { agent_id } }`).join(' ')} }`,
    )
    expect(aliased.body.data).toBeUndefined()
    expect(aliased.body.errors[0].extensions.detail.limit).toBe('cost')
  })

  it('GET serves queries and refuses mutations and subscriptions', async () => {
    const q = encodeURIComponent('query($l: Int) { agents(limit: $l) { next_cursor } }')
    const ok = await t.request('GET', `/v1/graphql?query=${q}&variables=${encodeURIComponent('{"l":1}')}`, {
      token,
    })
    expect(ok.status).toBe(200)
    expect(ok.body.data.agents).toBeDefined()
    const m = encodeURIComponent(
      'mutation { createAgent(input: { name: "g", behavior: hybrid }) { agent_id } }',
    )
    const refused = await t.request('GET', `/v1/graphql?query=${m}`, { token })
    expect(refused.status).toBe(400)
    expect(refused.body.error.message).toContain('POST')
    const s = encodeURIComponent('subscription { runEvents { seq } }')
    const sub = await t.request('POST', '/v1/graphql', { token, body: { query: decodeURIComponent(s) } })
    expect(sub.status).toBe(400)
    expect(sub.body.error.message).toContain('graphql-ws')
    const badVars = await t.request('GET', `/v1/graphql?query=${q}&variables=%7Bnope`, { token })
    expect(badVars.status).toBe(400)
    expect(badVars.body.error.detail.issues).toEqual([
      { location: 'query', path: 'variables', message: 'variables must be a JSON object' },
    ])
  })

  it("checks GET's query parameters and POST's body against the contract's getGraphql and postGraphql", async () => {
    const q = encodeURIComponent('{ agents { next_cursor } }')
    for (const [field, url] of [
      ['query', '/v1/graphql'],
      ['operationName', `/v1/graphql?query=${q}&operationName=${'o'.repeat(201)}`],
    ] as const) {
      const res = await t.request('GET', url, { token })
      expect(res.status, field).toBe(400)
      expect(res.body.error.code).toBe('invalid_request')
      expect(res.body.error.detail.fields).toEqual([field])
      expect(res.body.error.detail.issues[0].location).toBe('query')
    }
    const long = await t.request('POST', '/v1/graphql', {
      token,
      body: { query: '{ agents { next_cursor } }', operationName: 'o'.repeat(201) },
    })
    expect(long.status).toBe(400)
    expect(long.body.error.detail).toMatchObject({ fields: ['operationName'] })
    expect(long.body.error.detail.issues[0].location).toBe('body')
  })
})

describe('the schema is published', () => {
  it('GET /schema.graphql serves the printed SDL without a key, and /docs links it through the contract', async () => {
    const res = await t.request('GET', '/schema.graphql')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/plain')
    const file = readFileSync(new URL('../../openapi/agent-operations.graphql', import.meta.url), 'utf8')
    expect(file.endsWith(res.text)).toBe(true)
    expect(res.text).toContain('type Query')
    const contract = await t.request('GET', '/openapi.json')
    expect(contract.body.info.description).toContain('[/schema.graphql](/schema.graphql)')
  })
})

describe('text no store can keep', () => {
  // A `\u0000` escape is six plain characters in the JSON body (the body guard lets it pass); only the GraphQL
  // parser decodes it, so the check on parsed documents is what stops it reaching PostgreSQL.
  it('is refused in a decoded string literal and in variables, as invalid_request naming where', async () => {
    const literal = await gql(t, token, '{ records(connector_id: "a\\u0000b") { data { id } } }')
    expect(literal.status).toBe(200)
    expect(literal.body.data).toBeUndefined()
    expect(literal.body.errors[0].extensions).toMatchObject({
      code: 'invalid_request',
      status: 400,
      detail: { fields: ['query'] },
    })
    const variable = await gql(t, token, 'query($c: ID!) { records(connector_id: $c) { data { id } } }', {
      c: 'a\uD800b',
    })
    // The HTTP body guard refuses the JSON body first (a 400 envelope); either way no store sees it.
    expect(variable.status).toBe(400)
    expect(variable.body.error).toMatchObject({
      code: 'invalid_request',
      detail: { fields: ['variables.c'] },
    })
  })
})
