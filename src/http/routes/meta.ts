import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { OpenAPIHono } from '@hono/zod-openapi'
import { Scalar } from '@scalar/hono-api-reference'
import type { Context } from 'hono'
import { parse } from 'yaml'
import { getDocsRoute, getHealthzRoute, getOpenapiJsonRoute } from '../../../generated/routes.js'
import { ApiError } from '../../domain/errors.js'
import type { Services } from '../../services.js'
import type { AppEnv } from '../context.js'

export const CONTRACT_PATH = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../../openapi/agent-operations.yaml',
)

let contract: Record<string, unknown> | undefined
export function loadContract(): Record<string, unknown> {
  contract ??= parse(readFileSync(CONTRACT_PATH, 'utf8')) as Record<string, unknown>
  return contract
}

/** Public endpoints: health, the contract itself, and its interactive reference. */
export function registerMetaRoutes(app: OpenAPIHono<AppEnv>, services: Services): void {
  app.openapi(getHealthzRoute, async (c) => {
    try {
      await services.db.one('SELECT 1 AS ok')
    } catch {
      throw new ApiError('unavailable', 'The store does not answer', {})
    }
    return c.json({ status: 'ok' as const, store: services.db.dialect, version: '1.0.0' }, 200)
  })

  app.openapi(getOpenapiJsonRoute, (c) => c.json(loadContract(), 200))

  const reference = Scalar({ url: '/openapi.json', pageTitle: 'Agent Operations API' })
  app.openapi(getDocsRoute, (c) => reference(c as unknown as Context, async () => {}) as unknown as Response)
}
