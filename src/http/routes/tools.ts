import type { OpenAPIHono } from '@hono/zod-openapi'
import {
  deleteV1ToolsToolIdRoute,
  getV1ToolsRoute,
  getV1ToolsToolIdRoute,
  postV1ToolsRoute,
} from '../../../generated/routes.js'
import type { ToolService } from '../../domain/tools/service.js'
import type { AppEnv } from '../../surface/context.js'
import { toolsPage } from '../../surface/pages.js'
import { presentTool } from '../../surface/presenters.js'
import { requireScopeOf } from '../../surface/scopes.js'

/** What the tool routes call. */
export interface ToolRoutePorts {
  tools: Pick<ToolService, 'register' | 'list' | 'get' | 'retire'>
}

export function registerToolRoutes(app: OpenAPIHono<AppEnv>, services: ToolRoutePorts): void {
  app.openapi(postV1ToolsRoute, async (c) => {
    const auth = requireScopeOf(c, 'registerTool')
    const tool = await services.tools.register(auth.workspaceId, c.req.valid('json'))
    return c.json(presentTool(tool), 201)
  })

  app.openapi(getV1ToolsRoute, async (c) => {
    const auth = requireScopeOf(c, 'listTools')
    const query = c.req.valid('query')
    const includeRetired = query.include_retired === true
    return c.json(await toolsPage(services.tools, auth.workspaceId, includeRetired, query), 200)
  })

  app.openapi(getV1ToolsToolIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'getTool')
    const tool = await services.tools.get(auth.workspaceId, c.req.valid('param').tool_id)
    return c.json(presentTool(tool), 200)
  })

  app.openapi(deleteV1ToolsToolIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'retireTool')
    const tool = await services.tools.retire(auth.workspaceId, c.req.valid('param').tool_id)
    return c.json(presentTool(tool), 200)
  })
}
