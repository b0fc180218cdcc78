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
import type { CreateAgentInput } from '../domain/agents/service.js'
import { ApiError } from '../domain/errors.js'
import { encodeCursor, pageRequest, toPage } from '../domain/pagination.js'
import type { ControlAction, StartRunInput } from '../domain/runs/service.js'
import type { AssignTaskInput } from '../domain/tasks/service.js'
import type { RegisterToolInput } from '../domain/tools/service.js'
import type { CreateWebhookInput } from '../domain/webhooks/service.js'
import {
  presentAgent,
  presentDelivery,
  presentFrame,
  presentRun,
  presentTask,
  presentTool,
  presentWebhook,
  traceList,
} from '../http/presenters.js'
import { assertScope, callerOf } from '../http/scopes.js'
import type { GraphqlContext } from './context.js'
import { connectorRecords, runEvents } from './subscriptions.js'
import { body, params } from './validate.js'

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

const loadAgent = async (ctx: GraphqlContext, id: unknown) => {
  assertScope(ctx.auth, 'agents:read')
  const agent = await ctx.agents.load(String(id))
  return agent ? presentAgent(agent) : null
}

const runsOfAgent = async (agentId: string, args: Args, ctx: GraphqlContext) => {
  const auth = assertScope(ctx.auth, 'runs:read')
  const p = pageRequest(auth.workspaceId, 'runs', page(args))
  const views = await ctx.services.runs.listByAgent(auth.workspaceId, agentId, p.afterSeq, p.limit)
  return toPage(
    auth.workspaceId,
    'runs',
    { ...views, rows: views.rows.map((v) => ({ ...v, seq: v.run.seq })) },
    presentRun,
  )
}

const control =
  (action: ControlAction): Resolver =>
  async (_p, args, ctx) => {
    const auth = assertScope(ctx.auth, 'runs:write')
    const { run_id } = params<{ run_id: string }>(getV1RunsRunIdRoute, { run_id: args.id })
    return presentRun(await ctx.services.runs.control(auth.workspaceId, run_id, action, auth.identity))
  }

export const resolvers: Record<string, Record<string, Resolver>> = {
  Query: {
    run: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'runs:read')
      const { run_id } = params<{ run_id: string }>(getV1RunsRunIdRoute, { run_id: args.id })
      return presentRun(await ctx.services.runs.get(auth.workspaceId, run_id))
    },
    agent: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'agents:read')
      const { agent_id } = params<{ agent_id: string }>(getV1AgentsAgentIdRoute, { agent_id: args.id })
      return presentAgent(await ctx.services.agents.get(auth.workspaceId, agent_id))
    },
    agents: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'agents:read')
      const p = pageRequest(auth.workspaceId, 'agents', page(args))
      const rows = await ctx.services.agents.list(auth.workspaceId, p.afterSeq, p.limit)
      return toPage(auth.workspaceId, 'agents', rows, presentAgent)
    },
    task: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'tasks:read')
      const { task_id } = params<{ task_id: string }>(getV1TasksTaskIdRoute, { task_id: args.id })
      return presentTask(await ctx.services.tasks.get(auth.workspaceId, task_id))
    },
    tool: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'tools:read')
      const { tool_id } = params<{ tool_id: string }>(getV1ToolsToolIdRoute, { tool_id: args.id })
      return presentTool(await ctx.services.tools.get(auth.workspaceId, tool_id))
    },
    tools: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'tools:read')
      const includeRetired = args.include_retired === true
      // The cursor is bound to the filter, as in REST, so paging cannot switch lists halfway.
      const list = includeRetired ? 'tools:all' : 'tools'
      const p = pageRequest(auth.workspaceId, list, page(args))
      const rows = await ctx.services.tools.list(auth.workspaceId, includeRetired, p.afterSeq, p.limit)
      return toPage(auth.workspaceId, list, rows, presentTool)
    },
    webhook: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'webhooks:read')
      const { webhook_id } = params<{ webhook_id: string }>(getV1WebhooksWebhookIdRoute, {
        webhook_id: args.id,
      })
      return presentWebhook(await ctx.services.webhooks.get(auth.workspaceId, webhook_id))
    },
    webhooks: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'webhooks:read')
      const p = pageRequest(auth.workspaceId, 'webhooks', page(args))
      const rows = await ctx.services.webhooks.list(auth.workspaceId, p.afterSeq, p.limit)
      return toPage(auth.workspaceId, 'webhooks', rows, presentWebhook)
    },
    records: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'records:read')
      const { connector_id } = params<{ connector_id: string }>(getV1GridConnectorsConnectorIdRecordsRoute, {
        connector_id: args.connector_id,
      })
      const list = `records:${connector_id}`
      const p = pageRequest(auth.workspaceId, list, page(args))
      const rows = await ctx.services.ingestion.list(auth.workspaceId, connector_id, p.afterSeq, p.limit)
      return toPage(auth.workspaceId, list, rows, (r) => r)
    },
  },

  Run: {
    agent: (run, _a, ctx) => loadAgent(ctx, run.agent_id),
    trace: async (run, args, ctx) => {
      const auth = assertScope(ctx.auth, 'runs:read')
      const runId = String(run.run_id)
      const p = pageRequest(auth.workspaceId, traceList(runId), page(args))
      const read = await ctx.services.runs.frames(auth.workspaceId, runId, p.afterSeq, p.limit)
      // The paging rule (a live run always gets a cursor to poll from) is RunService.frames', as for REST.
      return {
        data: read.frames.map(presentFrame),
        next_cursor:
          read.nextAfter === null ? null : encodeCursor(auth.workspaceId, traceList(runId), read.nextAfter),
        run_status: read.status,
      }
    },
  },
  Agent: {
    runs: (agent, args, ctx) => runsOfAgent(String(agent.agent_id), args, ctx),
  },
  Task: {
    agent: (task, _a, ctx) => loadAgent(ctx, task.agent_id),
    run: async (task, _a, ctx) => {
      const auth = assertScope(ctx.auth, 'runs:read')
      if (typeof task.run_id !== 'string') return null
      const runId = task.run_id
      return orNull(async () => presentRun(await ctx.services.runs.get(auth.workspaceId, runId)))
    },
  },
  Webhook: {
    deliveries: async (webhook, args, ctx) => {
      const auth = assertScope(ctx.auth, 'webhooks:read')
      const webhookId = String(webhook.webhook_id)
      const list = `deliveries:${webhookId}`
      const p = pageRequest(auth.workspaceId, list, page(args))
      const rows = await ctx.services.webhooks.listDeliveries(
        auth.workspaceId,
        webhookId,
        p.afterSeq,
        p.limit,
      )
      return toPage(auth.workspaceId, list, rows, presentDelivery)
    },
  },

  Mutation: {
    createAgent: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'agents:write')
      const input = body<CreateAgentInput>(postV1AgentsRoute, args.input as Args)
      return presentAgent(await ctx.services.agents.create(auth.workspaceId, input))
    },
    assignTask: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'tasks:write')
      const { agent_id } = params<{ agent_id: string }>(postV1AgentsAgentIdTasksRoute, {
        agent_id: args.agent_id,
      })
      const input = body<AssignTaskInput>(postV1AgentsAgentIdTasksRoute, args.input as Args)
      return presentTask(await ctx.services.tasks.assign(auth.workspaceId, agent_id, input, callerOf(auth)))
    },
    registerTool: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'tools:write')
      const input = body<RegisterToolInput>(postV1ToolsRoute, args.input as Args)
      return presentTool(await ctx.services.tools.register(auth.workspaceId, input))
    },
    retireTool: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'tools:write')
      const { tool_id } = params<{ tool_id: string }>(deleteV1ToolsToolIdRoute, { tool_id: args.id })
      return presentTool(await ctx.services.tools.retire(auth.workspaceId, tool_id))
    },
    startRun: async (_p, args, ctx) => {
      const auth = assertScope(ctx.auth, 'runs:write')
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
      const auth = assertScope(ctx.auth, 'runs:approve')
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
      const auth = assertScope(ctx.auth, 'webhooks:write')
      const input = body<CreateWebhookInput>(postV1WebhooksRoute, args.input as Args)
      return presentWebhook(await ctx.services.webhooks.create(auth.workspaceId, input))
    },
  },
}

export const subscriptions = { runEvents, connectorRecords }
