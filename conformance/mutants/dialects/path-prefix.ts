/**
 * A deployment behind a gateway that serves it under a path prefix: `{base_url}` is `http://host/gateway/agentops`,
 * so every REST path is `/gateway/agentops/v1/...`, the stream `{stream_url}/v1/stream` under the same prefix, and
 * GraphQL beside them. The server behind the gateway knows nothing of the prefix: the links it writes (`trace_url`,
 * §2: "`/v1/runs/<run_id>/trace`") stay as the spec shows them, to be read under `{base_url}` (§1: "Paths carry the
 * `/v1` prefix under `{base_url}`"). A request outside the prefix never reaches it: the gateway answers 404 itself.
 */
import type { Dialect } from '../dialects.js'
import type { ProxiedRequest, ProxiedResponse } from '../proxy.js'

export const GATEWAY_PREFIX = '/gateway/agentops'

/** The path behind the gateway, or undefined for a path outside its prefix. */
export function behindGateway(path: string): string | undefined {
  if (!path.startsWith(`${GATEWAY_PREFIX}/`)) return undefined
  return path.slice(GATEWAY_PREFIX.length)
}

/** What the gateway answers for a path it routes nowhere: its own 404, not the deployment's envelope. */
function unrouted(req: ProxiedRequest): ProxiedResponse {
  const body = JSON.stringify({ message: `no route for ${req.method} ${req.path.split('?')[0]}` })
  return { status: 404, headers: { 'content-type': 'application/json' }, body }
}

/** `dialect` served under the gateway's prefix: its users give the suite the prefixed URLs. */
export function underGatewayPrefix(dialect: Dialect): Dialect {
  const { configure, request, upgradePath } = dialect
  return {
    ...dialect,
    description: `${dialect.description}; served under a gateway's path prefix (${GATEWAY_PREFIX}/v1/..., the stream and GraphQL too)`,
    configure(config) {
      configure?.(config)
      config.baseUrl = `${config.baseUrl.replace(/\/+$/, '')}${GATEWAY_PREFIX}`
      config.streamUrl = `${config.streamUrl.replace(/\/+$/, '')}${GATEWAY_PREFIX}`
      if (config.graphqlUrl) config.graphqlUrl = `${config.baseUrl}/v1/graphql`
    },
    request(req, ctx) {
      const path = behindGateway(req.path)
      if (path === undefined) return unrouted(req)
      const behind = { ...req, path }
      return request ? request(behind, ctx) : behind
    },
    upgradePath(path) {
      const behind = behindGateway(path)
      return behind === undefined || !upgradePath ? behind : upgradePath(behind)
    },
  }
}
