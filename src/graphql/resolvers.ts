/**
 * Resolvers: each one is the REST operation of the same name over again at the HTTP seam only (scope, input check,
 * service call, presenter). Every rule stays in the domain services; field resolvers of plain fields are graphql-js's
 * default (the presenters already produce the contract's snake_case shapes).
 */
import {
  deleteV1DestinationsDestinationIdRoute,
  deleteV1ToolsToolIdRoute,
  getV1AgentsAgentIdRoute,
  getV1DestinationsDestinationIdRoute,
  getV1GridConnectorsConnectorIdRecordsRoute,
  getV1RunsRunIdRoute,
  getV1TasksTaskIdRoute,
  getV1ToolsToolIdRoute,
  getV1WebhooksWebhookIdRoute,
  patchV1DestinationsDestinationIdRoute,
  postV1AgentsAgentIdRunsRoute,
  postV1AgentsAgentIdTasksRoute,
  postV1AgentsRoute,
  postV1DestinationsDestinationIdTestRoute,
  postV1DestinationsRoute,
  postV1RunsRunIdStepsStepIdApprovalRoute,
  postV1ToolsRoute,
  postV1WebhooksRoute,
} from '../../generated/routes.js'
import type { CreateAgentInput } from '../domain/agents/service.js'
import type { CreateDestinationInput, UpdateDestinationInput } from '../domain/destinations/service.js'
import type { ControlAction, StartRunInput } from '../domain/runs/service.js'
import type { AssignTaskInput } from '../domain/tasks/service.js'
import type { RegisterToolInput } from '../domain/tools/service.js'
import type { EventKind } from '../domain/webhooks/body.js'
import type { CreateWebhookInput } from '../domain/webhooks/service.js'
import { type AuthContext, callerOf } from '../surface/caller.js'
import {
  destinationDeliveriesPage,
  destinationsPage,
  presentDestination,
  presentTestResult,
} from '../surface/destinations.js'
import {
  agentsPage,
  deliveriesPage,
  recordsPage,
  runsOfAgentPage,
  toolsPage,
  tracePage,
  webhooksPage,
} from '../surface/pages.js'
import { presentAgent, presentRun, presentTask, presentTool, presentWebhook } from '../surface/presenters.js'
import { assertScopeOf, type ScopedOperation } from '../surface/scopes.js'
import type { GraphqlContext } from './context.js'
import type { ResolverPorts } from './ports.js'
import { connectorRecords, runEvents } from './subscriptions.js'
import { body, params, type RouteWithParams } from './validate.js'

type Args = Record<string, unknown>
type PageArgs = { cursor?: string | null; limit?: number | null }
type Resolver = (parent: Record<string, unknown>, args: Args, ctx: GraphqlContext) => unknown

const page = (args: Args) => {
  const { cursor, limit } = args as PageArgs
  return { cursor: cursor ?? undefined, limit: limit ?? undefined }
}

/** Runs as the REST operation it mirrors: that operation's scope is checked first, then `run` acts as the caller. */
const scoped =
  (
    operation: ScopedOperation,
    run: (ctx: GraphqlContext, auth: AuthContext, args: Args, parent: Record<string, unknown>) => unknown,
  ): Resolver =>
  async (parent, args, ctx) =>
    run(ctx, assertScopeOf(ctx.auth, operation), args, parent)

/** A path id checked by the REST operation's own parameter schema (an overlong id is 400 on both surfaces). */
const pathId = (route: RouteWithParams, key: string, value: unknown): string =>
  params<Record<string, string>>(route, { [key]: value })[key] as string

/** A query by id: the REST operation's scope and id check, the service's `get`, the presenter REST uses. */
const byId = <V>(
  operation: ScopedOperation,
  route: RouteWithParams,
  key: string,
  service: (ports: ResolverPorts) => { get(workspaceId: string, id: string): Promise<V> },
  present: (view: V) => unknown,
): Resolver =>
  scoped(operation, async (ctx, auth, args) =>
    present(await service(ctx.ports).get(auth.workspaceId, pathId(route, key, args.id))),
  )

const loadAgent = async (ctx: GraphqlContext, id: unknown) => {
  assertScopeOf(ctx.auth, 'getAgent')
  const agent = await ctx.agents.load(String(id))
  return agent ? presentAgent(agent) : null
}

const control = (action: ControlAction): Resolver =>
  scoped(`${action}Run`, async (ctx, auth, args) => {
    const runId = pathId(getV1RunsRunIdRoute, 'run_id', args.id)
    return presentRun(await ctx.ports.runs.control(auth.workspaceId, runId, action, auth.identity))
  })

export const resolvers: Record<string, Record<string, Resolver>> = {
  Query: {
    run: byId('getRun', getV1RunsRunIdRoute, 'run_id', (s) => s.runs, presentRun),
    agent: byId('getAgent', getV1AgentsAgentIdRoute, 'agent_id', (s) => s.agents, presentAgent),
    agents: scoped('listAgents', (ctx, auth, args) =>
      agentsPage(ctx.ports.agents, auth.workspaceId, page(args)),
    ),
    task: byId('getTask', getV1TasksTaskIdRoute, 'task_id', (s) => s.tasks, presentTask),
    tool: byId('getTool', getV1ToolsToolIdRoute, 'tool_id', (s) => s.tools, presentTool),
    tools: scoped('listTools', (ctx, auth, args) =>
      toolsPage(ctx.ports.tools, auth.workspaceId, args.include_retired === true, page(args)),
    ),
    webhook: byId('getWebhook', getV1WebhooksWebhookIdRoute, 'webhook_id', (s) => s.webhooks, presentWebhook),
    webhooks: scoped('listWebhooks', (ctx, auth, args) =>
      webhooksPage(ctx.ports.webhooks, auth.workspaceId, page(args)),
    ),
    destination: byId(
      'getDestination',
      getV1DestinationsDestinationIdRoute,
      'destination_id',
      (s) => s.destinations,
      presentDestination,
    ),
    destinations: scoped('listDestinations', (ctx, auth, args) =>
      destinationsPage(ctx.ports.destinations, auth.workspaceId, page(args)),
    ),
    records: scoped('listConnectorRecords', (ctx, auth, args) => {
      const connectorId = pathId(
        getV1GridConnectorsConnectorIdRecordsRoute,
        'connector_id',
        args.connector_id,
      )
      return recordsPage(ctx.ports.ingestion, auth.workspaceId, connectorId, page(args))
    }),
  },

  Run: {
    agent: (run, _a, ctx) => loadAgent(ctx, run.agent_id),
    trace: scoped('getRunTrace', (ctx, auth, args, run) =>
      tracePage(ctx.ports.runs, auth.workspaceId, String(run.run_id), page(args)),
    ),
  },
  Agent: {
    runs: scoped('listAgentRuns', (ctx, auth, args, agent) =>
      runsOfAgentPage(ctx.ports.runs, auth.workspaceId, String(agent.agent_id), page(args)),
    ),
  },
  Task: {
    agent: (task, _a, ctx) => loadAgent(ctx, task.agent_id),
    run: scoped('getRun', async (ctx, auth, _args, task) => {
      const runId = task.run_id
      // A task's run is started in the task's workspace and never deleted: it is always there to read.
      if (typeof runId !== 'string') return null
      return presentRun(await ctx.ports.runs.get(auth.workspaceId, runId))
    }),
  },
  StreamServerMessage: {
    // The runs topic's event, typed (the RunEvent interface); record and gap messages carry none (null).
    run_event: (message) => message.event,
  },
  Destination: {
    deliveries: scoped('listDestinationDeliveries', (ctx, auth, args, destination) =>
      destinationDeliveriesPage(
        ctx.ports.destinations,
        auth.workspaceId,
        String(destination.destination_id),
        page(args),
      ),
    ),
  },
  Webhook: {
    deliveries: scoped('listWebhookDeliveries', (ctx, auth, args, webhook) =>
      deliveriesPage(ctx.ports.webhooks, auth.workspaceId, String(webhook.webhook_id), page(args)),
    ),
  },

  Mutation: {
    createAgent: scoped('createAgent', async (ctx, auth, args) => {
      const input = body<CreateAgentInput>(postV1AgentsRoute, args.input as Args)
      return presentAgent(await ctx.ports.agents.create(auth.workspaceId, input))
    }),
    assignTask: scoped('assignTask', async (ctx, auth, args) => {
      const agentId = pathId(postV1AgentsAgentIdTasksRoute, 'agent_id', args.agent_id)
      const input = body<AssignTaskInput>(postV1AgentsAgentIdTasksRoute, args.input as Args)
      return presentTask(await ctx.ports.tasks.assign(auth.workspaceId, agentId, input, callerOf(auth)))
    }),
    registerTool: scoped('registerTool', async (ctx, auth, args) => {
      const input = body<RegisterToolInput>(postV1ToolsRoute, args.input as Args)
      return presentTool(await ctx.ports.tools.register(auth.workspaceId, input))
    }),
    retireTool: scoped('retireTool', async (ctx, auth, args) => {
      const toolId = pathId(deleteV1ToolsToolIdRoute, 'tool_id', args.id)
      return presentTool(await ctx.ports.tools.retire(auth.workspaceId, toolId))
    }),
    startRun: scoped('startRun', async (ctx, auth, args) => {
      const agentId = pathId(postV1AgentsAgentIdRunsRoute, 'agent_id', args.agent_id)
      const input = body<StartRunInput>(postV1AgentsAgentIdRunsRoute, args.input as Args)
      return presentRun(await ctx.ports.runs.start(auth.workspaceId, agentId, input, callerOf(auth)))
    }),
    pauseRun: control('pause'),
    resumeRun: control('resume'),
    cancelRun: control('cancel'),
    decideApproval: scoped('decideApproval', async (ctx, auth, args) => {
      const route = postV1RunsRunIdStepsStepIdApprovalRoute
      const { run_id, step_id } = params<{ run_id: string; step_id: string }>(route, {
        run_id: args.run_id,
        step_id: args.step_id,
      })
      const { decision, comment } = body<{ decision: 'approve' | 'reject'; comment?: string }>(
        route,
        args.input as Args,
      )
      const runs = ctx.ports.runs
      return presentRun(
        await runs.decide(auth.workspaceId, run_id, step_id, decision, auth.identity, comment),
      )
    }),
    createWebhook: scoped('createWebhook', async (ctx, auth, args) => {
      const input = body<CreateWebhookInput>(postV1WebhooksRoute, args.input as Args)
      return presentWebhook(await ctx.ports.webhooks.create(auth.workspaceId, input))
    }),
    createDestination: scoped('createDestination', async (ctx, auth, args) => {
      const input = body<CreateDestinationInput>(postV1DestinationsRoute, args.input as Args)
      return presentDestination(await ctx.ports.destinations.create(auth.workspaceId, input))
    }),
    updateDestination: scoped('updateDestination', async (ctx, auth, args) => {
      const route = patchV1DestinationsDestinationIdRoute
      const id = pathId(route, 'destination_id', args.id)
      const input = body<UpdateDestinationInput>(route, args.input as Args)
      return presentDestination(await ctx.ports.destinations.update(auth.workspaceId, id, input))
    }),
    deleteDestination: scoped('deleteDestination', async (ctx, auth, args) => {
      const id = pathId(deleteV1DestinationsDestinationIdRoute, 'destination_id', args.id)
      await ctx.ports.destinations.delete(auth.workspaceId, id)
      return true
    }),
    testDestination: scoped('testDestination', async (ctx, auth, args) => {
      const route = postV1DestinationsDestinationIdTestRoute
      const id = pathId(route, 'destination_id', args.id)
      const input = body<{ event?: EventKind }>(route, { event: args.event })
      return presentTestResult(await ctx.ports.destinations.test(auth.workspaceId, id, input.event))
    }),
  },
}

export const subscriptions = { runEvents, connectorRecords }
