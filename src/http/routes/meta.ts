import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { OpenAPIHono } from '@hono/zod-openapi'
import { Scalar } from '@scalar/hono-api-reference'
import { parse } from 'yaml'
import { getHealthzRoute, getOpenapiJsonRoute } from '../../../generated/routes.js'
import type { AppEnv } from '../../api/context.js'
import { ApiError } from '../../domain/errors.js'
import type { Services } from '../../services.js'

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

  // The page loads its script from this server (never a CDN), asks for no web fonts and turns off the hosted AI
  // agent (which fetches from scalar.com), so it renders offline. `agent` is newer than this integration's types.
  const offline = {
    url: '/openapi.json',
    pageTitle: 'Agent Operations API',
    cdn: '/docs/scalar.js',
    withDefaultFonts: false,
    agent: { disabled: true },
  }
  const reference = Scalar(offline)
  // Neither answer is JSON, so these are plain routes (the contract still documents both).
  app.get('/docs', reference)
  app.get('/docs/scalar.js', (c) => {
    c.header('Content-Type', 'application/javascript; charset=utf-8')
    c.header('Cache-Control', 'public, max-age=86400')
    return c.body(referenceScript(), 200)
  })
}

let script: Uint8Array<ArrayBuffer> | undefined
/** The standalone bundle of the installed @scalar/api-reference (the version package-lock.json pins). */
function referenceScript(): Uint8Array<ArrayBuffer> {
  script ??= new Uint8Array(
    readFileSync(
      join(dirname(createRequire(import.meta.url).resolve('@scalar/api-reference')), 'browser/standalone.js'),
    ),
  )
  return script
}
