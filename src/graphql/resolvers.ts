/**
 * Resolvers: each one is the REST operation of the same name over again at the HTTP seam only (scope, input check,
 * service call, presenter). Every rule stays in the domain services; field resolvers of plain fields are graphql-js's
 * default (the presenters already produce the contract's snake_case shapes).
 */
import {
  deleteV1ToolsToolIdRoute,
  getV1AgentsAgentIdRoute,
  getV1GridConnectorsConnectorIdRecordsRoute,
  getV1RunsRunIdRoute,
  getV1TasksTaskIdRoute,
  getV1ToolsToolIdRoute,
  getV1WebhooksWebhookIdRoute,
  postV1AgentsAgentIdRunsRoute,
  postV1AgentsAgentIdTasksRoute,
  postV1AgentsRoute,
  postV1RunsRunIdStepsStepIdApprovalRoute,
  postV1ToolsRoute,
  postV1WebhooksRoute,
} from '../../generated/routes.js'
import { callerOf } from '../api/caller.js'
import {
  agentsPage,
  deliveriesPage,
  recordsPage,
  runsOfAgentPage,
  toolsPage,
  tracePage,
  webhooksPage,
} from '../api/pages.js'
import { presentAgent, presentRun, presentTask, presentTool, presentWebhook } from '../api/presenters.js'
import { assertScopeOf, type ScopedOperation } from '../api/scopes.js'
import type { CreateAgentInput } from '../domain/agents/service.js'
import { ApiError } from '../domain/errors.js'
import type { ControlAction, StartRunInput } from '../domain/runs/service.js'
import type { AssignTaskInput } from '../domain/tasks/service.js'
import type { RegisterToolInput } from '../domain/tools/service.js'
import type { CreateWebhookInput } from '../domain/webhooks/service.js'
import type { GraphqlContext, GraphqlServices } from './context.js'
import { connectorRecords, runEvents } from './subscriptions.js'
import { body, params, type RouteWithParams } from './validate.js'

type Args = Record<string, unknown>
type PageArgs = { cursor?: string | null; limit?: number | null }
type Resolver = (parent: Record<string, unknown>, args: Args, ctx: GraphqlContext) => unknown

const page = (args: Args) => {
  const { cursor, limit } = args as PageArgs
  return { cursor: cursor ?? undefined, limit: limit ?? undefined }
}

/** A missing, deleted or foreign relation target reads as null rather than failing the parent. */
async function orNull<T>(load: () => Promise<T>): Promise<T | null> {
  try {
    return await load()
  } catch (err) {
    if (err instanceof ApiError && err.code === 'not_found') return null
    throw err
  }
}

/**
 * A query by id: the REST operation's scope and path-parameter check (`id` checked as its `key`), then the service
 * read and the presenter REST uses.
 */
const byId =
  <V>(
    operation: ScopedOperation,
    route: RouteWithParams,
    key: string,
    get: (services: GraphqlServices, workspaceId: string, id: string) => Promise<V>,
    present: (view: V) => unknown,
  ): Resolver =>
  async (_p, args, ctx) => {
    const auth = assertScopeOf(ctx.auth, operation)
    const id = params<Record<string, string>>(route, { [key]: args.id })[key] as string
    return present(await get(ctx.services, auth.workspaceId, id))
  }

const loadAgent = async (ctx: GraphqlContext, id: unknown) => {
  assertScopeOf(ctx.auth, 'getAgent')
  const agent = await ctx.agents.load(String(id))
  return agent ? presentAgent(agent) : null
}

const runsOfAgent = async (agentId: string, args: Args, ctx: GraphqlContext) => {
  const auth = assertScopeOf(ctx.auth, 'listAgentRuns')
  return runsOfAgentPage(ctx.services.runs, auth.workspaceId, agentId, page(args))
}

const control =
  (action: ControlAction): Resolver =>
  async (_p, args, ctx) => {
    const auth = assertScopeOf(ctx.auth, `${action}Run`)
    const { run_id } = params<{ run_id: string }>(getV1RunsRunIdRoute, { run_id: args.id })
    return presentRun(await ctx.services.runs.control(auth.workspaceId, run_id, action, auth.identity))
  }

export const resolvers: Record<string, Record<string, Resolver>> = {
  Query: {
    run: byId('getRun', getV1RunsRunIdRoute, 'run_id', (s, ws, id) => s.runs.get(ws, id), presentRun),
    agent: byId(
      'getAgent',
      getV1AgentsAgentIdRoute,
      'agent_id',
      (s, ws, id) => s.agents.get(ws, id),
      presentAgent,
    ),
    agents: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'listAgents')
      return agentsPage(ctx.services.agents, auth.workspaceId, page(args))
    },
    task: byId('getTask', getV1TasksTaskIdRoute, 'task_id', (s, ws, id) => s.tasks.get(ws, id), presentTask),
    tool: byId('getTool', getV1ToolsToolIdRoute, 'tool_id', (s, ws, id) => s.tools.get(ws, id), presentTool),
    tools: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'listTools')
      return toolsPage(ctx.services.tools, auth.workspaceId, args.include_retired === true, page(args))
    },
    webhook: byId(
      'getWebhook',
      getV1WebhooksWebhookIdRoute,
      'webhook_id',
      (s, ws, id) => s.webhooks.get(ws, id),
      presentWebhook,
    ),
    webhooks: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'listWebhooks')
      return webhooksPage(ctx.services.webhooks, auth.workspaceId, page(args))
    },
    records: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'listConnectorRecords')
      const { connector_id } = params<{ connector_id: string }>(getV1GridConnectorsConnectorIdRecordsRoute, {
        connector_id: args.connector_id,
      })
      return recordsPage(ctx.services.ingestion, auth.workspaceId, connector_id, page(args))
    },
  },

  Run: {
    agent: (run, _a, ctx) => loadAgent(ctx, run.agent_id),
    trace: async (run, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'getRunTrace')
      return tracePage(ctx.services.runs, auth.workspaceId, String(run.run_id), page(args))
    },
  },
  Agent: {
    runs: (agent, args, ctx) => runsOfAgent(String(agent.agent_id), args, ctx),
  },
  Task: {
    agent: (task, _a, ctx) => loadAgent(ctx, task.agent_id),
    run: async (task, _a, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'getRun')
      if (typeof task.run_id !== 'string') return null
      const runId = task.run_id
      return orNull(async () => presentRun(await ctx.services.runs.get(auth.workspaceId, runId)))
    },
  },
  StreamServerMessage: {
    // The runs topic's event, typed (the RunEvent interface); record and gap messages carry none.
    run_event: (message) => (message.type === 'event' ? message.event : null),
  },
  Webhook: {
    deliveries: async (webhook, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'listWebhookDeliveries')
      return deliveriesPage(ctx.services.webhooks, auth.workspaceId, String(webhook.webhook_id), page(args))
    },
  },

  Mutation: {
    createAgent: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'createAgent')
      const input = body<CreateAgentInput>(postV1AgentsRoute, args.input as Args)
      return presentAgent(await ctx.services.agents.create(auth.workspaceId, input))
    },
    assignTask: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'assignTask')
      const { agent_id } = params<{ agent_id: string }>(postV1AgentsAgentIdTasksRoute, {
        agent_id: args.agent_id,
      })
      const input = body<AssignTaskInput>(postV1AgentsAgentIdTasksRoute, args.input as Args)
      return presentTask(await ctx.services.tasks.assign(auth.workspaceId, agent_id, input, callerOf(auth)))
    },
    registerTool: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'registerTool')
      const input = body<RegisterToolInput>(postV1ToolsRoute, args.input as Args)
      return presentTool(await ctx.services.tools.register(auth.workspaceId, input))
    },
    retireTool: byId(
      'retireTool',
      deleteV1ToolsToolIdRoute,
      'tool_id',
      (s, ws, id) => s.tools.retire(ws, id),
      presentTool,
    ),
    startRun: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'startRun')
      const { agent_id } = params<{ agent_id: string }>(postV1AgentsAgentIdRunsRoute, {
        agent_id: args.agent_id,
      })
      const input = body<StartRunInput>(postV1AgentsAgentIdRunsRoute, args.input as Args)
      return presentRun(await ctx.services.runs.start(auth.workspaceId, agent_id, input, callerOf(auth)))
    },
    pauseRun: control('pause'),
    resumeRun: control('resume'),
    cancelRun: control('cancel'),
    decideApproval: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'decideApproval')
      const { run_id, step_id } = params<{ run_id: string; step_id: string }>(
        postV1RunsRunIdStepsStepIdApprovalRoute,
        { run_id: args.run_id, step_id: args.step_id },
      )
      const decision = body<{ decision: 'approve' | 'reject'; comment?: string }>(
        postV1RunsRunIdStepsStepIdApprovalRoute,
        args.input as Args,
      )
      return presentRun(
        await ctx.services.runs.decide(
          auth.workspaceId,
          run_id,
          step_id,
          decision.decision,
          auth.identity,
          decision.comment,
        ),
      )
    },
    createWebhook: async (_p, args, ctx) => {
      const auth = assertScopeOf(ctx.auth, 'createWebhook')
      const input = body<CreateWebhookInput>(postV1WebhooksRoute, args.input as Args)
      return presentWebhook(await ctx.services.webhooks.create(auth.workspaceId, input))
    },
  },
}

export const subscriptions = { runEvents, connectorRecords }
