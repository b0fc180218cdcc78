import type { OpenAPIHono } from '@hono/zod-openapi'
import {
  deleteV1AgentsAgentIdRoute,
  getV1AgentsAgentIdRoute,
  getV1AgentsRoute,
  getV1TasksTaskIdRoute,
  postV1AgentsAgentIdTasksRoute,
  postV1AgentsRoute,
} from '../../../generated/routes.js'
import type { AgentService } from '../../domain/agents/service.js'
import type { TaskService } from '../../domain/tasks/service.js'
import { callerOf } from '../../surface/caller.js'
import type { AppEnv } from '../../surface/context.js'
import { agentsPage } from '../../surface/pages.js'
import { presentAgent, presentTask } from '../../surface/presenters.js'
import { routeBody, routeInput } from '../../surface/route-input.js'
import { requireScopeOf } from '../../surface/scopes.js'

const AGENTS_PATH = '/v1/agents'

/** What the agent and task routes call. */
export interface AgentRoutePorts {
  agents: Pick<AgentService, 'create' | 'list' | 'get' | 'delete'>
  tasks: Pick<TaskService, 'assign' | 'get'>
}

export function registerAgentRoutes(app: OpenAPIHono<AppEnv>, services: AgentRoutePorts): void {
  // The busiest write, served outside `app.openapi` like GET /v1/runs/{id}: its headers and body are checked here
  // against the same contract route (routeInput, routeBody: the same schemas, order and answers as the typed
  // routes' validators) instead of by @hono/zod-openapi's three validator layers (headers, media-type gate, JSON),
  // each an async middleware, whose header reads build the request's whole Fetch Headers (bench:observability's
  // post-keyed route; docs/performance.md).
  app.post(AGENTS_PATH, async (c) => {
    routeInput(c, postV1AgentsRoute)
    const body = await routeBody(c, postV1AgentsRoute)
    const auth = requireScopeOf(c, 'createAgent')
    const agent = await services.agents.create(auth.workspaceId, body)
    return c.json(presentAgent(agent), 201)
  })

  app.openapi(getV1AgentsRoute, async (c) => {
    const auth = requireScopeOf(c, 'listAgents')
    return c.json(await agentsPage(services.agents, auth.workspaceId, c.req.valid('query')), 200)
  })

  app.openapi(getV1AgentsAgentIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'getAgent')
    const agent = await services.agents.get(auth.workspaceId, c.req.valid('param').agent_id)
    return c.json(presentAgent(agent), 200)
  })

  app.openapi(deleteV1AgentsAgentIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'deleteAgent')
    await services.agents.delete(auth.workspaceId, c.req.valid('param').agent_id)
    return c.body(null, 204)
  })

  app.openapi(postV1AgentsAgentIdTasksRoute, async (c) => {
    const auth = requireScopeOf(c, 'assignTask')
    const { agent_id } = c.req.valid('param')
    const task = await services.tasks.assign(auth.workspaceId, agent_id, c.req.valid('json'), callerOf(auth))
    return c.json(presentTask(task), 201)
  })

  app.openapi(getV1TasksTaskIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'getTask')
    const task = await services.tasks.get(auth.workspaceId, c.req.valid('param').task_id)
    return c.json(presentTask(task), 200)
  })
}
