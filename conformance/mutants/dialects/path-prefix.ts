/**
 * A deployment behind a gateway that serves it under path prefixes: `{base_url}` is `http://host/gateway/agentops`,
 * so every REST path is `/gateway/agentops/v1/...` (GraphQL beside them), and the stream has a prefix of its own,
 * `{stream_url}` being `ws://host/gateway/live` (§1 names the two apart: "The stream is at `{stream_url}/v1/stream`").
 * The server behind the gateway knows nothing of the prefixes: the links it writes (`trace_url`, §2:
 * "`/v1/runs/<run_id>/trace`") stay as the spec shows them, to be read under `{base_url}` (§1: "Paths carry the `/v1`
 * prefix under `{base_url}`"). A request the gateway routes nowhere (outside the prefixes, or the stream under the
 * REST prefix) never reaches it: the gateway answers 404 itself.
 */
import type { Dialect } from '../dialects.js'
import type { ProxiedRequest, ProxiedResponse } from '../proxy.js'

export const GATEWAY_PREFIX = '/gateway/agentops'
export const STREAM_PREFIX = '/gateway/live'

const STREAM_PATH = /^\/v1\/stream(?:[/?]|$)/

/** The path behind the gateway, or undefined for a path it routes nowhere. */
export function behindGateway(path: string): string | undefined {
  for (const [prefix, stream] of [
    [GATEWAY_PREFIX, false],
    [STREAM_PREFIX, true],
  ] as const) {
    if (!path.startsWith(`${prefix}/`)) continue
    const behind = path.slice(prefix.length)
    return STREAM_PATH.test(behind) === stream ? behind : undefined
  }
  return undefined
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
    description: `${dialect.description}; behind a gateway's path prefixes (${GATEWAY_PREFIX}/v1/... and GraphQL, the stream at ${STREAM_PREFIX}/v1/stream)`,
    configure(config) {
      configure?.(config)
      config.baseUrl = `${config.baseUrl.replace(/\/+$/, '')}${GATEWAY_PREFIX}`
      config.streamUrl = `${config.streamUrl.replace(/\/+$/, '')}${STREAM_PREFIX}`
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
