/** The scopes the schema documents and each field enforces. */
import type { Check } from '../../check.js'
import { expectStatus, unwantedHookUrl } from '../../fixtures.js'
import type { HttpResponse } from '../../http.js'
import { obj } from '../../http.js'
import { assert } from '../../types.js'
import { short } from '../../wait.js'
import { declaredSurface, gql } from '../graphql.js'
import { answered, dataOf, errorsOf, ROOT_OPERATIONS } from './answers.js'

export const schemaDocumentsScopes: Check = {
  id: 'graphql.schema-documents-scopes',
  title:
    'Each GraphQL root field mirroring a REST operation names, in its description, the scope that operation requires',
  level: 'profile',
  clauses: ['S4.15', 'S5.1'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const res = await gql(
      ctx.http,
      url,
      '{ __schema { queryType { fields { name description } } mutationType { fields { name description } } } }',
    )
    const schema = answered(res, '__schema', 'introspecting the root fields')
    const described = new Map<string, string>()
    for (const root of ['queryType', 'mutationType'])
      for (const f of (obj(schema[root]).fields as unknown[] | undefined) ?? [])
        described.set(String(obj(f).name), String(obj(f).description ?? ''))
    const wrong: string[] = []
    for (const [field, operationId] of Object.entries(ROOT_OPERATIONS)) {
      const op = ctx.contract.byId(operationId)
      const item = obj(obj(obj(ctx.contract.doc.paths)[op?.template ?? ''])[(op?.method ?? '').toLowerCase()])
      const scope = obj((item.security as unknown[] | undefined)?.[0]).bearerAuth
      const want = Array.isArray(scope) ? `(scope ${String(scope[0])})` : undefined
      if (!want) {
        wrong.push(`the contract gives ${operationId} no bearerAuth scope`)
        continue
      }
      const text = described.get(field)
      if (text === undefined || !text.includes(want))
        wrong.push(
          `${field}: ${text === undefined ? 'no such root field' : short(text)} does not say ${want}`,
        )
    }
    assert(wrong.length === 0, wrong.join('; '))
  },
}

export const fieldScopes: Check = {
  id: 'graphql.field-scopes',
  title:
    "Each GraphQL field that mirrors a REST operation needs that operation's scope: a token without it gets policy_denied naming it, a token with it is answered",
  level: 'profile',
  clauses: ['S4.15', 'S1.3'],
  needs: ['narrowScope', 'otherScope'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const scopeOf = (operationId: string): string | undefined => {
      const op = ctx.contract.byId(operationId)
      const item = obj(obj(obj(ctx.contract.doc.paths)[op?.template ?? ''])[(op?.method ?? '').toLowerCase()])
      const scope = obj((item.security as unknown[] | undefined)?.[0]).bearerAuth
      return Array.isArray(scope) ? String(scope[0]) : undefined
    }
    /** Every error of `res` by the alias or field its path starts with: the scope its detail says was missing. */
    const missing = (res: HttpResponse): Map<string, unknown> =>
      new Map(
        errorsOf(res).map((e) => {
          const ext = obj(e.extensions)
          const path = Array.isArray(e.path) ? e.path.join('.') : '?'
          return [
            path,
            ext.code === 'policy_denied' ? JSON.stringify(obj(ext.detail).limit) : `${String(ext.code)}`,
          ]
        }),
      )
    const wrong: string[] = []
    const expect = (got: Map<string, unknown>, path: string, operationId: string | null, data: unknown) => {
      const scope = operationId ? scopeOf(operationId) : undefined
      const want = operationId ? JSON.stringify([scope]) : undefined
      if (got.get(path) !== want)
        wrong.push(
          `${path}: ${want ? `expected policy_denied lacking ${want}` : 'expected an answer'}, got ${short(got.get(path) ?? data)}`,
        )
    }
    // The narrow token holds agents:read only.
    const agentId = await ctx.fx.agent()
    const narrow = ctx.as('narrowScope')
    const reads = await gql(
      narrow,
      url,
      `query($a: ID!) { agent(id: $a) { agent_id } withRuns: agent(id: $a) { runs(limit: 1) { next_cursor } } agents(limit: 1) { next_cursor }
        run(id: "run_x") { run_id } task(id: "tsk_x") { task_id } tool(id: "tol_x") { tool_id }
        tools(limit: 1) { next_cursor } webhook(id: "whk_x") { webhook_id } webhooks(limit: 1) { next_cursor }
        destination(id: "dst_x") { destination_id } destinations(limit: 1) { next_cursor }
        records(connector_id: "c") { next_cursor } }`,
      { a: agentId },
    )
    expectStatus(reads, 200, "the narrow token's queries")
    const readErrors = missing(reads)
    const data = dataOf(reads)
    assert(obj(data.agent).agent_id === agentId, `the narrow token's agent(id) answered ${short(data.agent)}`)
    assert(data.agents !== null, `the narrow token's agents answered ${short(reads.body)}`)
    expect(readErrors, 'agent', null, data.agent)
    expect(readErrors, 'agents', null, data.agents)
    // Agent.runs is RunPage!: its refusal makes the agent null too (GraphQL's null propagation).
    expect(readErrors, 'withRuns.runs', 'listAgentRuns', undefined)
    for (const field of [
      'run',
      'task',
      'tool',
      'tools',
      'webhook',
      'webhooks',
      'destination',
      'destinations',
      'records',
    ])
      expect(readErrors, field, ROOT_OPERATIONS[field] ?? field, data[field])
    const writes = await gql(
      narrow,
      url,
      `mutation { createAgent(input: { name: "n", behavior: autonomous }) { agent_id }
        assignTask(agent_id: "agt_x", input: { description: "d" }) { task_id }
        registerTool(input: { name: "n", provider: "p", policy_binding: { envelope: "default", required_scopes: [] } }) { tool_id }
        retireTool(id: "tol_x") { tool_id } startRun(agent_id: "agt_x") { run_id } pauseRun(id: "run_x") { run_id }
        resumeRun(id: "run_x") { run_id } cancelRun(id: "run_x") { run_id }
        decideApproval(run_id: "run_x", step_id: "s", input: { decision: approve }) { run_id }
        createWebhook(input: { url: "${unwantedHookUrl(ctx)}", events: ["run.started"], secret: "s" }) { webhook_id }
        createDestination(input: { type: cloudevents, name: "n" }) { destination_id }
        updateDestination(id: "dst_x", input: { name: "m" }) { destination_id } deleteDestination(id: "dst_x")
        testDestination(id: "dst_x") { ok } }`,
    )
    expectStatus(writes, 200, "the narrow token's mutations")
    const writeErrors = missing(writes)
    for (const field of Object.keys(obj(writes.body).data ?? {}))
      expect(writeErrors, field, ROOT_OPERATIONS[field] ?? field, dataOf(writes)[field])
    assert(Object.keys(dataOf(writes)).length === 14, `the mutations answered ${short(writes.body)}`)
    // The other token holds tasks:* only: a task is answered, its agent and run are not.
    const task = await ctx.http.post(`/v1/agents/${agentId}/tasks`, {
      description: ctx.name('gql-scope-task'),
    })
    expectStatus(task, [200, 201, 202], 'assigning a task')
    const taskId = String(obj(task.body).task_id)
    const other = await gql(
      ctx.as('otherScope'),
      url,
      'query($t: ID!) { task(id: $t) { task_id agent { agent_id } run { run_id } } }',
      { t: taskId },
    )
    const otherErrors = missing(other)
    assert(
      obj(dataOf(other).task).task_id === taskId,
      `the tasks:* token's task(id) answered ${short(other.body)}`,
    )
    expect(otherErrors, 'task.agent', 'getAgent', undefined)
    expect(otherErrors, 'task.run', 'getRun', undefined)
    assert(wrong.length === 0, wrong.join('; '))
  },
}
