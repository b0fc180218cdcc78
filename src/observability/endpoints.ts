/**
 * The operator's endpoints, `/readyz` and `/metrics`, answered by Node before the API's app sees the request:
 * they are about this process, not the API (the contract does not describe them, and a third-party server of the
 * same API need not have them), they answer while the app is not built yet (migrating), and a scrape never
 * counts as API traffic. Neither is authenticated with API keys: `/metrics` carries no tenant data and has a
 * bearer token of its own when `AGENTOPS_METRICS_TOKEN` is set.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { ApiError, errorEnvelope, methodNotAllowed } from '../domain/errors.js'
import { newId } from '../domain/ids.js'
import type { Metrics } from './metrics.js'
import type { Readiness } from './readiness.js'

export const READYZ_PATH = '/readyz'
export const METRICS_PATH = '/metrics'
/** The methods both operator endpoints answer. */
const OPERATOR_METHODS = ['GET', 'HEAD'] as const

export interface OperatorEndpointOptions {
  readiness: Readiness
  /** Absent: metrics are off, or served on another port (then this is the API port's handler). */
  metrics?: Metrics
  metricsToken?: string
}

/** Answers the request when it is for an operator endpoint and returns true; false leaves it to the API. */
export type OperatorHandler = (req: IncomingMessage, res: ServerResponse) => boolean

function pathOf(url: string | undefined): string {
  if (!url) return ''
  const q = url.indexOf('?')
  return q < 0 ? url : url.slice(0, q)
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}

function send(res: ServerResponse, status: number, contentType: string, body: string, head: boolean): void {
  res.writeHead(status, {
    'content-type': contentType,
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(body),
  })
  res.end(head ? undefined : body)
}

/** Refuses as the API does: the spec §7 envelope (errorEnvelope) with the error's status and headers. */
function error(res: ServerResponse, err: ApiError): void {
  const body = JSON.stringify(errorEnvelope(err, newId('req')))
  res.writeHead(err.status, {
    ...err.headers,
    'content-type': 'application/json',
    'cache-control': 'no-store',
  })
  res.end(body)
}

export function operatorEndpoints(options: OperatorEndpointOptions): OperatorHandler {
  const expected = options.metricsToken ? digest(`Bearer ${options.metricsToken}`) : undefined
  const { readiness, metrics } = options

  const readyz = async (res: ServerResponse, head: boolean) => {
    const report = await readiness.check()
    send(res, report.ready ? 200 : 503, 'application/json', JSON.stringify({ status: report.status }), head)
  }

  const scrape = async (req: IncomingMessage, res: ServerResponse, head: boolean, m: Metrics) => {
    // Compared as digests: equal lengths for timingSafeEqual, and no timing hint about the token's length.
    if (expected && !timingSafeEqual(digest(req.headers.authorization ?? ''), expected)) {
      error(
        res,
        new ApiError(
          'unauthenticated',
          'GET /metrics needs Authorization: Bearer <AGENTOPS_METRICS_TOKEN>',
          {},
          { 'www-authenticate': 'Bearer realm="metrics"' },
        ),
      )
      return
    }
    const { contentType, body } = await m.render()
    send(res, 200, contentType, body, head)
  }

  return (req, res) => {
    const url = req.url
    // One character decides for every API request: both endpoints sit at the root, the API under /v1 and /graphql.
    if (url === undefined || (url.charCodeAt(1) !== 0x72 /* r */ && url.charCodeAt(1) !== 0x6d) /* m */)
      return false
    const path = pathOf(url)
    const isReadyz = path === READYZ_PATH
    const isMetrics = path === METRICS_PATH && metrics !== undefined
    if (!isReadyz && !isMetrics) return false
    const head = req.method === 'HEAD'
    if (req.method !== 'GET' && !head) {
      // As the API answers a method a path does not serve (src/http/allowed-methods.ts).
      error(res, methodNotAllowed(path, req.method ?? '', OPERATOR_METHODS))
      return true
    }
    const answered = isReadyz ? readyz(res, head) : scrape(req, res, head, metrics as Metrics)
    answered.catch(() => {
      if (!res.headersSent) error(res, new ApiError('internal_error', 'The operator endpoint failed'))
      else res.destroy()
    })
    return true
  }
}
