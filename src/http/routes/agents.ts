import type { OpenAPIHono } from '@hono/zod-openapi'
import {
  deleteV1AgentsAgentIdRoute,
  getV1AgentsAgentIdRoute,
  getV1AgentsRoute,
  getV1TasksTaskIdRoute,
  postV1AgentsAgentIdTasksRoute,
  postV1AgentsRoute,
} from '../../../generated/routes.js'
import { pageRequest, toPage } from '../../domain/pagination.js'
import type { Services } from '../../services.js'
import type { AppEnv } from '../context.js'
import { presentAgent, presentTask } from '../presenters.js'
import { callerOf, requireScope } from '../scopes.js'

export function registerAgentRoutes(app: OpenAPIHono<AppEnv>, services: Services): void {
  app.openapi(postV1AgentsRoute, async (c) => {
    const auth = requireScope(c, 'agents:write')
    const agent = await services.agents.create(auth.workspaceId, c.req.valid('json'))
    return c.json(presentAgent(agent), 201)
  })

  app.openapi(getV1AgentsRoute, async (c) => {
    const auth = requireScope(c, 'agents:read')
    const page = pageRequest(auth.workspaceId, 'agents', c.req.valid('query'))
    const rows = await services.agents.list(auth.workspaceId, page.afterSeq, page.limit)
    return c.json(toPage(auth.workspaceId, 'agents', rows, presentAgent), 200)
  })

  app.openapi(getV1AgentsAgentIdRoute, async (c) => {
    const auth = requireScope(c, 'agents:read')
    const agent = await services.agents.get(auth.workspaceId, c.req.valid('param').agent_id)
    return c.json(presentAgent(agent), 200)
  })

  app.openapi(deleteV1AgentsAgentIdRoute, async (c) => {
    const auth = requireScope(c, 'agents:write')
    await services.agents.delete(auth.workspaceId, c.req.valid('param').agent_id)
    return c.body(null, 204)
  })

  app.openapi(postV1AgentsAgentIdTasksRoute, async (c) => {
    const auth = requireScope(c, 'tasks:write')
    const task = await services.tasks.assign(
      auth.workspaceId,
      c.req.valid('param').agent_id,
      c.req.valid('json'),
      callerOf(auth),
    )
    return c.json(presentTask(task), 201)
  })

  app.openapi(getV1TasksTaskIdRoute, async (c) => {
    const auth = requireScope(c, 'tasks:read')
    const task = await services.tasks.get(auth.workspaceId, c.req.valid('param').task_id)
    return c.json(presentTask(task), 200)
  })
}
