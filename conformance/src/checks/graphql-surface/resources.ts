/**
 * The resources and mutations that mirror REST operations, the records query, and which operations take an
 * Idempotency-Key.
 */
import { randomBytes } from 'node:crypto'
import { sameJson } from '../../canonical.js'
import type { Check } from '../../check.js'
import { expectStatus, firstAwaitingStep, pageItems, toolRegistration } from '../../fixtures.js'
import { obj } from '../../http.js'
import { assert } from '../../types.js'
import { short, waitUntil } from '../../wait.js'
import { declaredSurface, gql } from '../graphql.js'
import { batch, ingestAccepted } from '../ingest.js'
import { receiverUrl } from '../webhooks.js'
import {
  answered,
  bothLists,
  codeOf,
  DEST_FIELDS,
  dataOf,
  errorsOf,
  type Json,
  restJson,
  sameFields,
  TASK_FIELDS,
  TOOL_FIELDS,
  WEBHOOK_FIELDS,
  walkIds,
} from './answers.js'

export const toolsAndTasks: Check = {
  id: 'graphql.tools-and-tasks',
  title:
    'GraphQL registerTool, retireTool, assignTask and the tool, tools, task queries answer what REST shows (a task with its agent and run)',
  level: 'profile',
  clauses: ['S4.15', 'S4.7', 'S4.8', 'S4.14'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const name = ctx.name('gql-tool')
    const registered = answered(
      await gql(ctx.http, url, 'mutation($in: ToolRegistration!) { registerTool(input: $in) { tool_id } }', {
        in: toolRegistration(ctx, 'succeed', name),
      }),
      'registerTool',
      'registerTool',
    )
    const toolId = String(registered.tool_id)
    ctx.cleanup(`retire tool ${name}`, (http) => http.delete(`/v1/tools/${toolId}`))
    const restTool = await restJson(ctx, `/v1/tools/${toolId}`)
    assert(
      restTool.name === name &&
        sameJson(restTool.input_schema, { type: 'object' }) &&
        JSON.stringify(restTool.output_schema) === '{}',
      `the tool registered through GraphQL (JSON inputs as variables) reads ${short(restTool)} over REST`,
    )
    // JSON written as a literal in the document: every kind of value, and a variable inside it.
    const schemaLiteral =
      '{ type: "object", description: $d, properties: { n: { type: "number", maximum: 2.5 }, b: { type: "boolean", default: true }, z: { default: null }, l: { type: "array", items: { type: "integer" }, default: [1, 2] } } }'
    const literalName = ctx.name('gql-tool-literal')
    const reg = toolRegistration(ctx, 'succeed', literalName)
    const withLiteral = answered(
      await gql(
        ctx.http,
        url,
        `mutation($n: String!, $p: String!, $b: PolicyBindingInput!, $c: JSON, $d: String) { registerTool(input: { name: $n, provider: $p, policy_binding: $b, config: $c, input_schema: ${schemaLiteral} }) { tool_id input_schema } }`,
        {
          n: literalName,
          p: reg.provider,
          b: reg.policy_binding,
          c: reg.config ?? null,
          d: 'from a variable',
        },
      ),
      'registerTool',
      'registerTool with a JSON literal',
    )
    ctx.cleanup(`retire tool ${literalName}`, (http) =>
      http.delete(`/v1/tools/${String(withLiteral.tool_id)}`),
    )
    const wantSchema = {
      type: 'object',
      description: 'from a variable',
      properties: {
        n: { type: 'number', maximum: 2.5 },
        b: { type: 'boolean', default: true },
        z: { default: null },
        l: { type: 'array', items: { type: 'integer' }, default: [1, 2] },
      },
    }
    const literalRest = await restJson(ctx, `/v1/tools/${String(withLiteral.tool_id)}`)
    assert(
      sameJson(literalRest.input_schema, wantSchema) && sameJson(withLiteral.input_schema, wantSchema),
      `a JSON literal input_schema reads ${short(literalRest.input_schema)} over REST and ${short(withLiteral.input_schema)} through GraphQL`,
    )
    // Registered without `idempotent`: not idempotent, as REST's registration defaults it (the contract's default).
    assert(
      literalRest.idempotent === false,
      `a tool registered through GraphQL without idempotent reads idempotent ${short(literalRest.idempotent)} over REST, not false`,
    )
    const toolQuery = `query($id: ID!) { tool(id: $id) { ${TOOL_FIELDS.filter((f) => f !== 'policy_binding').join(' ')} policy_binding { envelope required_scopes } } }`
    sameFields(
      answered(await gql(ctx.http, url, toolQuery, { id: toolId }), 'tool', 'tool(id)'),
      restTool,
      TOOL_FIELDS,
      'tool',
    )
    const retired = answered(
      await gql(ctx.http, url, 'mutation($id: ID!) { retireTool(id: $id) { tool_id status retired_at } }', {
        id: toolId,
      }),
      'retireTool',
      'retireTool',
    )
    const restRetired = await restJson(ctx, `/v1/tools/${toolId}`)
    assert(
      retired.status === 'retired' &&
        restRetired.status === 'retired' &&
        retired.retired_at === restRetired.retired_at,
      `retireTool answered ${short(retired)}; REST reads ${short(restRetired)}`,
    )
    // tools lists what GET /v1/tools lists, retired ones only with include_retired.
    // The whole list, page by page, through GraphQL and over REST (other checks register tools too).
    const walk = (page: (cursor: string | undefined) => Promise<Json>) => walkIds(page, 'tool_id')
    for (const retiredToo of [false, true]) {
      const rest = await walk((cursor) =>
        restJson(
          ctx,
          `/v1/tools?limit=200${retiredToo ? '&include_retired=true' : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        ),
      )
      const graph = await walk(async (cursor) =>
        answered(
          await gql(
            ctx.http,
            url,
            `query($k: String) { tools(limit: 200, cursor: $k, include_retired: ${retiredToo}) { data { tool_id } next_cursor } }`,
            { k: cursor ?? null },
          ),
          'tools',
          'tools',
        ),
      )
      assert(
        sameJson(graph, rest),
        `tools(include_retired: ${retiredToo}) lists ${short(graph)}, REST ${short(rest)}`,
      )
      assert(
        graph.includes(toolId) === retiredToo,
        `tools(include_retired: ${retiredToo}) ${retiredToo ? 'lacks' : 'lists'} the retired tool ${toolId}`,
      )
    }
    // assignTask on an agent: the task, its agent and its run as REST shows them.
    const agentId = await ctx.fx.agent()
    const task = answered(
      await gql(
        ctx.http,
        url,
        'mutation($a: ID!, $in: TaskAssign!) { assignTask(agent_id: $a, input: $in) { task_id } }',
        { a: agentId, in: { description: ctx.name('gql-task'), priority: 2, data_source: null } },
      ),
      'assignTask',
      'assignTask',
    )
    const taskId = String(task.task_id)
    const restTask = await restJson(ctx, `/v1/tasks/${taskId}`)
    const read = answered(
      await gql(
        ctx.http,
        url,
        `query($id: ID!) { task(id: $id) { ${TASK_FIELDS.join(' ')} run_id agent { agent_id name } run { run_id agent_id } } }`,
        { id: taskId },
      ),
      'task',
      'task(id)',
    )
    sameFields(read, restTask, [...TASK_FIELDS, 'run_id'], 'task')
    assert(obj(read.agent).agent_id === agentId, `task.agent is ${short(read.agent)}, not agent ${agentId}`)
    if (typeof restTask.run_id === 'string')
      assert(
        obj(read.run).run_id === restTask.run_id && obj(read.run).agent_id === agentId,
        `task.run is ${short(read.run)}, REST's run_id ${restTask.run_id}`,
      )
    else assert(read.run === null, `a task without a run answered task.run ${short(read.run)}`)
    // Ids are checked by the REST operation's own rules: an overlong one is invalid_request, a missing one not_found.
    const long = await gql(ctx.http, url, 'query($id: ID!) { task(id: $id) { task_id } }', {
      id: 'x'.repeat(300),
    })
    assert(
      dataOf(long).task === null && codeOf(long) === 'invalid_request',
      `task(id: <300 characters>) answered ${short(long.body)}`,
    )
    const missing = await gql(ctx.http, url, 'query($id: ID!) { tool(id: $id) { tool_id } }', {
      id: `${toolId}zz`,
    })
    assert(
      dataOf(missing).tool === null && codeOf(missing) === 'not_found',
      `tool(id: <unknown>) answered ${short(missing.body)}`,
    )
    const badInput = await gql(
      ctx.http,
      url,
      'mutation($in: ToolRegistration!) { registerTool(input: $in) { tool_id } }',
      { in: { ...toolRegistration(ctx, 'succeed', ''), name: '' } },
    )
    assert(
      dataOf(badInput).registerTool === null && codeOf(badInput) === 'invalid_request',
      `registerTool with an empty name answered ${short(badInput.body)}`,
    )
  },
}

export const webhooksAndDestinations: Check = {
  id: 'graphql.webhooks-and-destinations',
  title:
    'GraphQL createWebhook, createDestination, updateDestination, testDestination, deleteDestination and their queries and delivery pages answer what REST shows',
  level: 'profile',
  clauses: ['S4.15', 'S4.11'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const receiver = receiverUrl(ctx)
    const tag = ctx.name('gql-hook')
    const hook = answered(
      await gql(ctx.http, url, 'mutation($in: WebhookCreate!) { createWebhook(input: $in) { webhook_id } }', {
        in: {
          url: `${receiver}/${tag}`,
          events: ['agent.created'],
          secret: `whsec-conf-${randomBytes(12).toString('hex')}`,
        },
      }),
      'createWebhook',
      'createWebhook',
    )
    const hookId = String(hook.webhook_id)
    ctx.cleanup(`delete webhook ${hookId}`, (http) => http.delete(`/v1/webhooks/${hookId}`))
    const restHook = await restJson(ctx, `/v1/webhooks/${hookId}`)
    const hookQuery = `query($id: ID!) { webhook(id: $id) { ${WEBHOOK_FIELDS.join(' ')} deliveries(limit: 10) { data { delivery_id webhook_id event status } next_cursor } } }`
    sameFields(
      answered(await gql(ctx.http, url, hookQuery, { id: hookId }), 'webhook', 'webhook(id)'),
      restHook,
      WEBHOOK_FIELDS,
      'webhook',
    )
    const [hooks, restHooks] = await bothLists(ctx, 'webhooks', '/v1/webhooks', 'webhook_id')
    assert(
      sameJson(hooks, restHooks) && hooks.includes(hookId),
      `webhooks lists ${short(hooks)}, REST ${short(restHooks)}`,
    )
    // A destination: created, read, listed, renamed, tested, its deliveries paged, deleted.
    const destTag = ctx.name('gql-dest')
    const created = answered(
      await gql(
        ctx.http,
        url,
        'mutation($in: DestinationCreate!) { createDestination(input: $in) { destination_id } }',
        {
          in: {
            type: 'cloudevents',
            name: destTag,
            events: ['agent.created'],
            config: { url: `${receiver}/${destTag}`, mode: 'binary' },
          },
        },
      ),
      'createDestination',
      'createDestination',
    )
    const destId = String(created.destination_id)
    ctx.cleanup(`delete destination ${destId}`, (http) => http.delete(`/v1/destinations/${destId}`))
    const destQuery = `query($id: ID!) { destination(id: $id) { ${DEST_FIELDS.join(' ')} deliveries(limit: 10) { data { delivery_id destination_id event status } next_cursor } } }`
    sameFields(
      answered(await gql(ctx.http, url, destQuery, { id: destId }), 'destination', 'destination(id)'),
      await restJson(ctx, `/v1/destinations/${destId}`),
      DEST_FIELDS,
      'destination',
    )
    const [dests, restDests] = await bothLists(ctx, 'destinations', '/v1/destinations', 'destination_id')
    assert(
      sameJson(dests, restDests) && dests.includes(destId),
      `destinations lists ${short(dests)}, REST ${short(restDests)}`,
    )
    const renamed = answered(
      await gql(
        ctx.http,
        url,
        'mutation($id: ID!, $in: DestinationUpdate!) { updateDestination(id: $id, input: $in) { name } }',
        {
          id: destId,
          in: { name: `${destTag}-renamed`, status: null },
        },
      ),
      'updateDestination',
      'updateDestination',
    )
    const restRenamed = await restJson(ctx, `/v1/destinations/${destId}`)
    assert(
      renamed.name === `${destTag}-renamed` && restRenamed.name === renamed.name,
      `updateDestination answered ${short(renamed)}; REST reads ${short(restRenamed)}`,
    )
    const tested = answered(
      await gql(
        ctx.http,
        url,
        'mutation($id: ID!) { testDestination(id: $id, event: "agent.created") { ok event event_id } }',
        {
          id: destId,
        },
      ),
      'testDestination',
      'testDestination',
    )
    assert(
      tested.event === 'agent.created' &&
        typeof tested.event_id === 'string' &&
        typeof tested.ok === 'boolean',
      `testDestination answered ${short(tested)}`,
    )
    const badEvent = await gql(
      ctx.http,
      url,
      'mutation($id: ID!) { testDestination(id: $id, event: "no.such") { ok } }',
      {
        id: destId,
      },
    )
    assert(
      codeOf(badEvent) === 'invalid_request',
      `testDestination(event: "no.such") answered ${short(badEvent.body)}`,
    )
    // One agent created: both the webhook and the destination get a delivery, paged through GraphQL as over REST.
    await ctx.fx.newAgent()
    for (const [what, query, id, rest, field] of [
      ['webhook', hookQuery, hookId, `/v1/webhooks/${hookId}/deliveries?limit=10`, 'webhook'],
      ['destination', destQuery, destId, `/v1/destinations/${destId}/deliveries?limit=10`, 'destination'],
    ] as const) {
      const page = await waitUntil(
        `the ${what}'s delivery page to list a delivery`,
        async () => obj(answered(await gql(ctx.http, url, query, { id }), field, `${what}(id)`).deliveries),
        (p) => Array.isArray(p.data) && p.data.length > 0,
        ctx.config.waitMs,
      )
      const restPage = await restJson(ctx, rest)
      const first = obj((page.data as unknown[])[0])
      const restFirst = obj((Array.isArray(restPage.data) ? restPage.data : [])[0])
      assert(
        first.delivery_id === restFirst.delivery_id && first[`${what}_id`] === id,
        `the ${what}'s first delivery is ${short(first)} through GraphQL, ${short(restFirst)} over REST`,
      )
    }
    const deleted = await gql(ctx.http, url, 'mutation($id: ID!) { deleteDestination(id: $id) }', {
      id: destId,
    })
    assert(dataOf(deleted).deleteDestination === true, `deleteDestination answered ${short(deleted.body)}`)
    const gone = await ctx.http.get(`/v1/destinations/${destId}`)
    assert(gone.status === 404, `after deleteDestination, GET /v1/destinations/{id} answered ${gone.status}`)
    const again = await gql(ctx.http, url, 'query($id: ID!) { destination(id: $id) { destination_id } }', {
      id: destId,
    })
    assert(
      dataOf(again).destination === null && codeOf(again) === 'not_found',
      `a deleted destination reads ${short(again.body)}`,
    )
  },
}

export const runMutations: Check = {
  id: 'graphql.run-mutations',
  title:
    'GraphQL startRun, pauseRun, resumeRun, cancelRun and decideApproval act like their REST operations, and agent.runs lists the run',
  level: 'profile',
  clauses: ['S4.15', 'S3.3'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    // A run over slow tools stays running long enough to be paused, resumed and cancelled: eight, as three requests
    // come before the pause, which on a loaded machine or a slow deployment can outlast three slow steps (the
    // cancel ends the run, so the longer plan costs no time).
    const agentId = (await ctx.fx.slowAgent(8)).id
    const started = answered(
      await gql(
        ctx.http,
        url,
        'mutation($a: ID!, $in: RunStartRequest) { startRun(agent_id: $a, input: $in) { run_id agent_id status trace_level } }',
        {
          a: agentId,
          in: { inputs: { note: 'gql' }, trace_level: 'detailed', mode: null },
        },
      ),
      'startRun',
      'startRun',
    )
    const runId = String(started.run_id)
    assert(
      started.agent_id === agentId && started.trace_level === 'detailed',
      `startRun answered ${short(started)}`,
    )
    const restRun = await restJson(ctx, `/v1/runs/${runId}`)
    assert(
      restRun.agent_id === agentId && restRun.trace_level === 'detailed',
      `REST reads the run as ${short(restRun)}`,
    )
    // No input at all: the REST operation's empty body.
    const bare = answered(
      await gql(ctx.http, url, 'mutation($a: ID!) { startRun(agent_id: $a) { run_id trace_level } }', {
        a: agentId,
      }),
      'startRun',
      'startRun without input',
    )
    assert(typeof bare.run_id === 'string', `startRun without input answered ${short(bare)}`)
    ctx.cleanup(`cancel run ${String(bare.run_id)}`, (http) =>
      http.post(`/v1/runs/${String(bare.run_id)}/cancel`),
    )
    const runs = answered(
      await gql(
        ctx.http,
        url,
        'query($id: ID!) { agent(id: $id) { runs(limit: 5) { data { run_id } next_cursor } } }',
        {
          id: agentId,
        },
      ),
      'agent',
      'agent.runs',
    )
    const listed = obj(runs.runs)
    assert(
      Array.isArray(listed.data) && listed.data.some((r) => obj(r).run_id === runId),
      `agent.runs answered ${short(listed)}`,
    )
    // Each control answers the run as REST then reads it (or refuses as REST does).
    for (const action of ['pause', 'resume', 'cancel'] as const) {
      const res = await gql(ctx.http, url, `mutation($id: ID!) { ${action}Run(id: $id) { run_id status } }`, {
        id: runId,
      })
      const run = obj(dataOf(res)[`${action}Run`])
      const rest = await restJson(ctx, `/v1/runs/${runId}`)
      if (errorsOf(res).length > 0) {
        assert(
          action !== 'cancel' && codeOf(res) === 'invalid_state' && run.run_id === undefined,
          `${action}Run answered ${short(res.body)}`,
        )
        continue
      }
      assert(
        run.run_id === runId && typeof run.status === 'string',
        `${action}Run answered ${short(res.body)}`,
      )
      if (action === 'cancel')
        assert(
          run.status === 'cancelled' && rest.status === 'cancelled',
          `cancelRun answered ${short(run)}, REST ${short(rest.status)}`,
        )
    }
    const missing = await gql(ctx.http, url, 'mutation($id: ID!) { pauseRun(id: $id) { run_id } }', {
      id: `${runId.slice(0, -4)}zzzz`,
    })
    assert(
      dataOf(missing).pauseRun === null && codeOf(missing) === 'not_found',
      `pauseRun of an unknown run answered ${short(missing.body)}`,
    )
    const waiting = await ctx.fx.awaitingRun()
    const stepId = firstAwaitingStep(waiting.waiting)
    const decided = answered(
      await gql(
        ctx.http,
        url,
        'mutation($r: ID!, $s: String!, $in: ApprovalDecision!) { decideApproval(run_id: $r, step_id: $s, input: $in) { run_id status } }',
        { r: waiting.runId, s: stepId, in: { decision: 'reject', comment: 'gql conformance' } },
      ),
      'decideApproval',
      'decideApproval',
    )
    const after = await ctx.fx.waitForStatus(waiting.runId, (s) => s !== 'awaiting_approval', 'decided')
    assert(
      decided.run_id === waiting.runId && after.status === 'failed',
      `decideApproval(reject) answered ${short(decided)}; REST reads ${short(after.status)}, not failed`,
    )
  },
}

export const recordsAndSchema: Check = {
  id: 'graphql.records-and-schema',
  title:
    'GraphQL records(connector_id) pages what GET /v1/grid/connectors/{id}/records pages, and /schema.graphql serves the SDL without a key',
  level: 'profile',
  clauses: ['S4.15', 'S8.1'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const connector = ctx.name('gql-recs')
    await ingestAccepted(ctx, connector, batch(ctx, 3), 'ingesting 3 records')
    const rest = await restJson(ctx, `/v1/grid/connectors/${connector}/records?limit=2`)
    const page = answered(
      await gql(
        ctx.http,
        url,
        'query($c: ID!) { records(connector_id: $c, limit: 2) { data { id seq body lineage { leaf_hash batch_root } } next_cursor } }',
        {
          c: connector,
        },
      ),
      'records',
      'records(connector_id)',
    )
    // GraphQL's page is the reference profile's ({ data }); REST's is whatever page the deployment serves.
    const ids = (items: unknown) => JSON.stringify((Array.isArray(items) ? items : []).map((r) => obj(r).id))
    const restIds = ids(pageItems(rest))
    assert(
      ids(page.data) === restIds && (page.data as unknown[]).length === 2,
      `records answered ${ids(page.data)}, REST ${restIds}`,
    )
    assert(
      typeof page.next_cursor === 'string',
      `records' first page of 2 has next_cursor ${short(page.next_cursor)}`,
    )
    const next = answered(
      await gql(
        ctx.http,
        url,
        'query($c: ID!, $k: String) { records(connector_id: $c, cursor: $k) { data { id } next_cursor } }',
        {
          c: connector,
          k: page.next_cursor,
        },
      ),
      'records',
      'records with the next cursor',
    )
    assert(
      (next.data as unknown[]).length === 1 && next.next_cursor === null,
      `the second page is ${short(next)}`,
    )
    const bad = await gql(ctx.http, url, '{ records(connector_id: "bad id!") { next_cursor } }')
    assert(
      dataOf(bad).records === null && codeOf(bad) === 'invalid_request',
      `records(connector_id: "bad id!") answered ${short(bad.body)}`,
    )
    const sdl = await ctx.http.get('/schema.graphql', { token: null })
    expectStatus(sdl, 200, 'GET /schema.graphql without a token')
    assert(
      sdl.headers['content-type'] === 'text/plain; charset=utf-8' &&
        sdl.text.includes('type Query {') &&
        sdl.text.includes('type Subscription {') &&
        sdl.text.includes('trace(') &&
        sdl.text.includes('scalar JSON'),
      `GET /schema.graphql answered ${sdl.headers['content-type']} ${short(sdl.text, 200)}`,
    )
  },
}

export const idempotencyKeysMutationsOnly: Check = {
  id: 'graphql.idempotency-keys-mutations-only',
  title:
    'Over POST /v1/graphql an Idempotency-Key keys the mutations only: a query under a used key runs again, the operation operationName picks decides',
  level: 'profile',
  clauses: ['S4.15', 'S8.3'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const key = (label: string) => ({ 'Idempotency-Key': ctx.name(`gql-key-${label}`) })
    const k1 = key('query')
    const first = await gql(ctx.http, url, '{ agents(limit: 1) { next_cursor } }', {}, k1)
    const second = await gql(ctx.http, url, '{ __typename }', {}, k1)
    assert(
      first.status === 200 && second.status === 200 && dataOf(second).__typename === 'Query',
      `two different queries under one key answered ${first.status} then ${second.status} ${short(second.body)}`,
    )
    // operationName null, as GraphQL clients send it for a document of one operation, names no operation.
    const k0 = key('query-null-name')
    const n1 = await ctx.http.post(
      url,
      { query: '{ agents(limit: 1) { next_cursor } }', operationName: null },
      { headers: k0 },
    )
    const n2 = await ctx.http.post(url, { query: '{ __typename }', operationName: null }, { headers: k0 })
    assert(
      n1.status === 200 && n2.status === 200 && dataOf(n2).__typename === 'Query',
      `two different queries with operationName null under one key answered ${n1.status} then ${n2.status} ${short(n2.body)}`,
    )
    // One document, two operations: operationName picks the query (not keyed) or the mutation (keyed).
    const name = ctx.name('gql-key-agent')
    const doc = `query Q { __typename } mutation M($n: String!) { createAgent(input: { name: $n, behavior: autonomous }) { agent_id } }`
    const k2 = key('pick-query')
    const q1 = await ctx.http.post(
      url,
      { query: doc, operationName: 'Q', variables: { n: name } },
      { headers: k2 },
    )
    const q2 = await ctx.http.post(
      url,
      { query: doc, operationName: 'Q', variables: { n: `${name}-2` } },
      { headers: k2 },
    )
    assert(
      q1.status === 200 && q2.status === 200 && dataOf(q2).__typename === 'Query',
      `operationName Q (a query) under one key with two bodies answered ${q1.status} then ${q2.status} ${short(q2.body)}`,
    )
    const k3 = key('pick-mutation')
    const m1 = await ctx.http.post(
      url,
      { query: doc, operationName: 'M', variables: { n: name } },
      { headers: k3 },
    )
    const id = obj(dataOf(m1).createAgent).agent_id
    assert(typeof id === 'string', `operationName M answered ${short(m1.body)}`)
    ctx.cleanup(`delete agent ${name}`, (http) => http.delete(`/v1/agents/${String(id)}`))
    const m2 = await ctx.http.post(
      url,
      { query: doc, operationName: 'M', variables: { n: `${name}-2` } },
      { headers: k3 },
    )
    assert(
      m2.status === 409,
      `operationName M under its key with another body answered ${m2.status}, not 409`,
    )
    // A document past the parser's 5000 tokens is no query the server can tell: it is keyed like any POST, so
    // another body under its key is 409 (a document that does not parse, itself keyed).
    const k4 = key('long')
    const long = await gql(
      ctx.http,
      url,
      `{ ${Array.from({ length: 2600 }, (_, i) => `a${i}: __typename`).join(' ')} }`,
      {},
      k4,
    )
    const other = await gql(ctx.http, url, '{', {}, k4)
    assert(
      other.status === 409,
      `a document of more than 5000 tokens (answered ${long.status}), then another body under its key answered ${other.status}, not 409`,
    )
  },
}
