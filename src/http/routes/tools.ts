import type { OpenAPIHono } from '@hono/zod-openapi'
import {
  deleteV1ToolsToolIdRoute,
  getV1ToolsRoute,
  getV1ToolsToolIdRoute,
  postV1ToolsRoute,
} from '../../../generated/routes.js'
import { pageRequest, toPage } from '../../domain/pagination.js'
import type { Services } from '../../services.js'
import type { AppEnv } from '../context.js'
import { presentTool } from '../presenters.js'
import { requireScope } from '../scopes.js'

export function registerToolRoutes(app: OpenAPIHono<AppEnv>, services: Services): void {
  app.openapi(postV1ToolsRoute, async (c) => {
    const auth = requireScope(c, 'tools:write')
    const tool = await services.tools.register(auth.workspaceId, c.req.valid('json'))
    return c.json(presentTool(tool), 201)
  })

  app.openapi(getV1ToolsRoute, async (c) => {
    const auth = requireScope(c, 'tools:read')
    const query = c.req.valid('query')
    const includeRetired = query.include_retired === true
    // The cursor is bound to the filter too, so paging cannot switch lists halfway.
    const list = includeRetired ? 'tools:all' : 'tools'
    const page = pageRequest(auth.workspaceId, list, query)
    const rows = await services.tools.list(auth.workspaceId, includeRetired, page.afterSeq, page.limit)
    return c.json(toPage(auth.workspaceId, list, rows, presentTool), 200)
  })

  app.openapi(getV1ToolsToolIdRoute, async (c) => {
    const auth = requireScope(c, 'tools:read')
    const tool = await services.tools.get(auth.workspaceId, c.req.valid('param').tool_id)
    return c.json(presentTool(tool), 200)
  })

  app.openapi(deleteV1ToolsToolIdRoute, async (c) => {
    const auth = requireScope(c, 'tools:write')
    const tool = await services.tools.retire(auth.workspaceId, c.req.valid('param').tool_id)
    return c.json(presentTool(tool), 200)
  })
}
