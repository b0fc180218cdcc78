import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { OpenAPIHono } from '@hono/zod-openapi'
import { Scalar } from '@scalar/hono-api-reference'
import { getHealthzRoute, getOpenapiJsonRoute } from '../../../generated/routes.js'
import { ApiError } from '../../domain/errors.js'
import type { Db } from '../../domain/ports.js'
import { PACKAGE_ROOT } from '../../package-root.js'
import type { AppEnv } from '../../surface/context.js'
import { ORIGIN_VARY, requestOrigin } from '../request-origin.js'

/** openapi/agent-operations.yaml as JSON (`npm run generate` writes it; `generate:check` keeps it equal). */
export const CONTRACT_JSON_PATH = join(PACKAGE_ROOT, 'generated/openapi.json')

let contract: Record<string, unknown> | undefined
export function loadContract(): Record<string, unknown> {
  contract ??= JSON.parse(readFileSync(CONTRACT_JSON_PATH, 'utf8')) as Record<string, unknown>
  return contract
}

/** Public endpoints: health, the contract itself, and its interactive reference. */
export function registerMetaRoutes(
  app: OpenAPIHono<AppEnv>,
  services: { db: Pick<Db, 'one' | 'dialect'> },
): void {
  app.openapi(getHealthzRoute, async (c) => {
    try {
      await services.db.one('SELECT 1 AS ok')
    } catch {
      throw new ApiError('unavailable', 'The store does not answer', {})
    }
    return c.json({ status: 'ok' as const, store: services.db.dialect, version: '1.0.0' }, 200)
  })

  // The document names the origin it was served from first, so the docs page's requests and samples (and a
  // generator pointed at this URL) target this server, then the contract's own list.
  app.openapi(getOpenapiJsonRoute, (c) => {
    c.header('Vary', ORIGIN_VARY)
    return c.json(servedContract(requestOrigin(c.req.url, (name) => c.req.header(name))), 200)
  })

  // The page loads its script from this server (never a CDN), asks for no web fonts and turns off the hosted AI
  // agent (which fetches from scalar.com), so it renders offline. Nothing on it needs the internet: no "Open API
  // Client" button (it opens client.scalar.com), no developer toolbar (its Share and Deploy go to scalar.com), no
  // telemetry; the sidebar footer's "Powered by Scalar" link (no option turns it off) is hidden by style.
  // `agent` and `showDeveloperTools` are newer than this integration's types.
  const offline = {
    url: '/openapi.json',
    pageTitle: 'Agent Operations API',
    cdn: '/docs/scalar.js',
    withDefaultFonts: false,
    agent: { disabled: true },
    hideClientButton: true,
    showDeveloperTools: 'never',
    telemetry: false,
    customCss: 'a[href*="scalar.com"] { display: none !important; }',
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

interface Server {
  url: string
  description?: string
}

/** The contract with `origin` as its first server (listed once). */
function servedContract(origin: string): Record<string, unknown> {
  const contract = loadContract()
  const listed = (contract.servers as Server[] | undefined) ?? []
  return {
    ...contract,
    servers: [
      { url: origin, description: 'This server: the origin this document was served from.' },
      ...listed.filter((server) => server.url !== origin),
    ],
  }
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
