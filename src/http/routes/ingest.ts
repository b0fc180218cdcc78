import { performance } from 'node:perf_hooks'
import type { OpenAPIHono } from '@hono/zod-openapi'
import { createMiddleware } from 'hono/factory'
import {
  getV1GridConnectorsConnectorIdRecordsRoute,
  postV1GridConnectorsConnectorIdIngestRoute,
} from '../../../generated/routes.js'
import { ApiError } from '../../domain/errors.js'
import { checkBatchSize, type IngestionService } from '../../domain/ingestion/service.js'
import type { KeyService } from '../../domain/keys/service.js'
import type { Services } from '../../services.js'
import type { AppEnv } from '../../surface/context.js'
import { recordsPage } from '../../surface/pages.js'
import { STREAM_PATH } from '../../surface/paths.js'
import { requireScopeOf } from '../../surface/scopes.js'

const INGEST_PATH = '/v1/grid/connectors/:connector_id/ingest'

/** What the ingest routes call: the batch and the records, the stream's key check, the ingest metrics. */
export interface IngestRoutePorts extends Pick<Services, 'metrics'> {
  ingestion: Pick<IngestionService, 'ingest' | 'list'>
  keys: Pick<KeyService, 'verifyRequest'>
}

/**
 * A batch over the record limit is 413 payload_too_large (like an oversized body), not the 400 the schema's
 * maxItems would give; so it is counted before the validator runs, on the body guard's one parse of the body.
 */
const batchSizeGuard = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.method !== 'POST') return next()
  requireScopeOf(c, 'ingestBatch')
  let parsed: unknown
  try {
    parsed = await c.req.json()
  } catch {
    return next() // the validator answers with the precise 400
  }
  const records = (parsed as { records?: unknown } | null)?.records
  if (Array.isArray(records)) checkBatchSize(records.length)
  return next()
})

export function registerIngestRoutes(app: OpenAPIHono<AppEnv>, services: IngestRoutePorts): void {
  app.use(INGEST_PATH, batchSizeGuard)

  app.openapi(postV1GridConnectorsConnectorIdIngestRoute, async (c) => {
    const auth = requireScopeOf(c, 'ingestBatch')
    const { connector_id } = c.req.valid('param')
    const started = performance.now()
    const result = await services.ingestion.ingest(
      { id: auth.workspaceId, policyClasses: auth.workspace.policyClasses },
      connector_id,
      c.req.valid('json').records,
    )
    services.metrics?.ingest.batch(result.accepted, result.rejected, (performance.now() - started) / 1000)
    return c.json(result, 202)
  })

  app.openapi(getV1GridConnectorsConnectorIdRecordsRoute, async (c) => {
    const auth = requireScopeOf(c, 'listConnectorRecords')
    const { connector_id } = c.req.valid('param')
    return c.json(
      await recordsPage(services.ingestion, auth.workspaceId, connector_id, c.req.valid('query')),
      200,
    )
  })

  // A plain GET on the stream (no Upgrade header) reaches the app, authenticated and counted by the /v1 steps like
  // the upgrade (`?access_token=` too): say why it cannot be served, so the answer is the error envelope with the
  // rate-limit figures rather than a bare 404. The contract documents the stream under `x-websockets`, not `paths`, so
  // this is a plain route, not a generated one.
  app.get(STREAM_PATH, () => {
    throw new ApiError(
      'invalid_request',
      'This endpoint is a WebSocket: open it with an Upgrade: websocket request',
      {
        issues: [{ location: 'header', path: 'Upgrade', message: 'Required: websocket' }],
        fields: ['Upgrade'],
      },
    )
  })
}
