/**
 * Dialects: deployments that make other choices wherever the spec leaves a gap. Unlike mutants they are correct,
 * so every core check must still pass through them; only profile checks may fail. This is the proof that the
 * suite keeps the two levels apart and never fails a foreign implementation on the reference profile's choices.
 */
import type { SuiteConfig } from '../src/config.js'
import { readDocument } from '../src/contract.js'
import { bodySignedDialect } from './dialects/body-signed.js'
import { declaredDialect } from './dialects/declared.js'
import { ownIdsDialect } from './dialects/own-ids.js'
import { underGatewayPrefix } from './dialects/path-prefix.js'
import { editJson, type Json, type Mutant, type ProxiedResponse, pathOnly } from './proxy.js'

/** A correct deployment that chose differently where the spec is silent; every core check must pass through it. */
export interface Dialect extends Mutant {
  /** The declarations this deployment's users would put in --config (README "Declaring what cannot be discovered"). */
  configure?(config: SuiteConfig): void
  /** Core checks that rightly skip through this dialect (a surface it does not have), with no other skip allowed. */
  expectSkips?: string[]
}

/** The dialect family `conformance:mutants` runs after the mutants. */
export function createDialects(openapiPath: string): Dialect[] {
  // The body-signed deployment is also reached through a gateway's path prefix: a foreign deployment often is.
  return [
    foreignDialect(openapiPath),
    ownIdsDialect(),
    declaredDialect(),
    underGatewayPrefix(bodySignedDialect()),
  ]
}

interface Operation {
  method: string
  pattern: RegExp
  /** `METHOD /template`, as `notServed` in --config lists it. */
  name: string
}

/** The operations the contract marks `x-extension: true` (the reference profile's additions to spec §4). */
export function extensionOperations(openapiPath: string): Operation[] {
  const doc = readDocument(openapiPath) as { paths: Record<string, Record<string, Json>> }
  const out: Operation[] = []
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      if (item[method]?.['x-extension'] !== true) continue
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`)
      out.push({ method: method.toUpperCase(), pattern, name: `${method.toUpperCase()} ${template}` })
    }
  }
  return out
}

/** Error codes renamed the way another implementation might name them; policy_denied is the spec's own. */
const CODES: Record<string, string> = {
  invalid_request: 'bad_request',
  not_found: 'resource_not_found',
  idempotency_key_reused: 'conflict',
  idempotency_key_in_progress: 'conflict',
  rate_limited: 'too_many_requests',
  invalid_cursor: 'bad_request',
  invalid_state: 'conflict',
  unauthenticated: 'unauthorized',
}

/** `"burst";r=4;t=10, "hourly";r=11;t=3600` → the figures of one window, for X-RateLimit-* headers. */
function windowOf(value: string | undefined, name: string): { r: string; t: string } | undefined {
  const m = new RegExp(`"${name}";r=(\\d+);t=(\\d+)`).exec(value ?? '')
  return m ? { r: m[1]!, t: m[2]! } : undefined
}

/**
 * Retry-After as an HTTP-date (RFC 9110 §10.2.3 allows it beside delay-seconds; the spec names neither): the moment
 * the wait ends, rounded up to the next whole second, as a server that keeps its windows' reset times would say it.
 */
export function retryAfterAsDate(headers: Record<string, string>): Record<string, string> {
  const seconds = headers['retry-after']
  if (seconds === undefined || !/^\d+$/.test(seconds)) return headers
  const at = Math.ceil(Date.now() / 1000 + Number(seconds)) * 1000
  return { ...headers, 'retry-after': new Date(at).toUTCString() }
}

/**
 * The reference's two windows as X-RateLimit-* (hourly, its reset an RFC 3339 time) and X-RateLimit-Burst-* (burst)
 * headers.
 */
function legacyRateHeaders(headers: Record<string, string>): Record<string, string> {
  const { ratelimit, 'ratelimit-policy': policy, ...rest } = headers
  if (ratelimit === undefined) return headers
  const quota = (name: string) => new RegExp(`"${name}";q=(\\d+)`).exec(policy ?? '')?.[1] ?? '0'
  const h = windowOf(ratelimit, 'hourly')
  const b = windowOf(ratelimit, 'burst')
  return {
    ...rest,
    'x-ratelimit-limit': quota('hourly'),
    'x-ratelimit-remaining': h?.r ?? '0',
    // The hourly window's reset as the moment it resets (RFC 3339), as some APIs write it; the burst's in seconds.
    'x-ratelimit-reset': new Date(Date.now() + Number(h?.t ?? '0') * 1000).toISOString(),
    'x-ratelimit-burst-limit': quota('burst'),
    'x-ratelimit-burst-remaining': b?.r ?? '0',
    'x-ratelimit-burst-reset': b?.t ?? '0',
  }
}

const CREATIONS = [/^\/v1\/agents$/, /^\/v1\/agents\/[^/]+\/tasks$/, /^\/v1\/tools$/, /^\/v1\/webhooks$/]

/**
 * A minimal foreign implementation: none of the extension endpoints (404), its own error codes, the older
 * X-RateLimit-* header names, 200 instead of 201 for creations other than run start, and 200 with a body for
 * deletions.
 */
export function foreignDialect(openapiPath: string): Dialect {
  const extensions = extensionOperations(openapiPath)
  const isExtension = (method: string, path: string) =>
    extensions.some((op) => op.method === method && op.pattern.test(pathOnly(path)))
  return {
    id: 'foreign-minimal',
    description:
      'No extension endpoints, other error codes, X-RateLimit-* headers (the hourly reset a time), Retry-After as an HTTP-date, 200 for creations, 200 for deletions',
    targets: [],
    expectSkips: [
      'graphql.spec-401-without-token',
      'graphql.spec-tenancy',
      'graphql.spec-scopes',
      'graphql.spec-ratelimit-headers',
      'graphql.spec-request-rules',
    ],
    configure(config) {
      // No GraphQL surface here, so none is declared: its checks skip as "not declared".
      delete config.graphqlUrl
      // Its users know which of the profile's extensions it does not serve: the parts of core checks that go
      // through them are given up knowingly (else those checks are partial and the verdict INCOMPLETE).
      config.notServed = extensions.map((op) => op.name)
    },
    request(req) {
      if (!isExtension(req.method, req.path)) return req
      const body = JSON.stringify({
        error: {
          code: 'resource_not_found',
          message: 'No such route',
          detail: {},
          request_id: 'req_foreign',
        },
      })
      return {
        status: 404,
        headers: {
          'content-type': 'application/json',
          'x-request-id': 'req_foreign',
          'x-ratelimit-limit': '1000',
          'x-ratelimit-remaining': '999',
          'x-ratelimit-reset': '60',
          'x-ratelimit-burst-limit': '100',
          'x-ratelimit-burst-remaining': '99',
          'x-ratelimit-burst-reset': '5',
        },
        body,
      }
    },
    response(req, res) {
      let out: ProxiedResponse = { ...res, headers: retryAfterAsDate(legacyRateHeaders(res.headers)) }
      if (out.status >= 400) {
        out = editJson(out, (b) => {
          const error = b.error as Json | undefined
          const code = typeof error?.code === 'string' ? CODES[error.code] : undefined
          return code ? { ...b, error: { ...error, code } } : undefined
        })
      }
      if (req.method === 'POST' && out.status === 201 && CREATIONS.some((p) => p.test(pathOnly(req.path))))
        out = { ...out, status: 200 }
      if (req.method === 'DELETE' && out.status === 204)
        out = {
          ...out,
          status: 200,
          headers: { ...out.headers, 'content-type': 'application/json' },
          body: '{"deleted":true}',
        }
      return out
    },
  }
}
