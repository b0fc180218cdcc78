/**
 * Mutants for pagination, rate limiting, creation codes, tool registration/retirement and request validation.
 * Each simulates one plausible server bug.
 */
import {
  editJson,
  errorAnswer,
  header,
  type Json,
  type Mutant,
  type ProxiedRequest,
  type ProxiedResponse,
  parseJson,
  pathOnly,
  query,
  withQuery,
} from '../proxy.js'

const isTracePage = (req: ProxiedRequest) =>
  req.method === 'GET' && /^\/v1\/runs\/[^/]+\/trace$/.test(pathOnly(req.path))

const isToolList = (req: ProxiedRequest) => req.method === 'GET' && pathOnly(req.path) === '/v1/tools'

/** Replaces the error code (and optionally the status) of a JSON error answer. */
function recode(res: ProxiedResponse, code: string, status = res.status): ProxiedResponse {
  return editJson({ ...res, status }, (b) => ({ error: { ...(b.error as Json), code } }))
}

export function pagingMutants(): Mutant[] {
  return [
    // ---- pagination ----
    {
      id: 'trace-limit-ignored',
      description: 'A trace page ignores limit and holds every frame',
      targets: ['runs.trace-pages-walk'],
      request(req) {
        if (!isTracePage(req)) return req
        const q = query(req.path)
        if (!q.has('limit') || Number(q.get('limit')) >= 200) return req
        q.set('limit', '200')
        return { ...req, path: withQuery(req.path, q) }
      },
    },
    {
      id: 'trace-cursor-ignored',
      description: "A trace page ignores its cursor: every page is the trace's first",
      targets: ['runs.trace-pages-walk'],
      request(req) {
        if (!isTracePage(req) || !query(req.path).has('cursor')) return req
        const q = query(req.path)
        q.delete('cursor')
        return { ...req, path: withQuery(req.path, q) }
      },
    },
    {
      id: 'bad-cursor-crashes-500',
      description: 'Decoding a cursor the server never issued throws: 500 internal_error instead of a 4xx',
      targets: ['pagination.bad-cursor', 'pagination.bad-cursor-code'],
      response(req, res) {
        if (!isToolList(req) || !query(req.path).has('cursor') || res.status < 400 || res.status >= 500)
          return res
        return recode(res, 'internal_error', 500)
      },
    },
    {
      id: 'bad-cursor-restarts-list',
      description: 'An undecodable cursor is ignored and the first page is served',
      targets: ['pagination.bad-cursor', 'pagination.bad-cursor-code'],
      async response(req, res, ctx) {
        if (!isToolList(req) || res.status !== 400) return res
        const q = query(req.path)
        if (!q.has('cursor')) return res
        q.delete('cursor')
        return ctx.upstream({ ...req, path: withQuery(req.path, q) })
      },
    },
    {
      id: 'bad-cursor-generic-code',
      description: 'A bad cursor answers 400 with the generic invalid_request code instead of invalid_cursor',
      targets: ['pagination.bad-cursor-code'],
      response(req, res) {
        if (!isToolList(req) || res.status !== 400 || !query(req.path).has('cursor')) return res
        return recode(res, 'invalid_request')
      },
    },
    {
      id: 'bad-cursor-detail-unnamed',
      description: 'A bad cursor answers 400 invalid_cursor with an empty detail, not naming the parameter',
      targets: ['pagination.bad-cursor-code'],
      response(req, res) {
        if (!isToolList(req) || res.status !== 400 || !query(req.path).has('cursor')) return res
        return editJson(res, (b) => ({ error: { ...(b.error as Json), detail: {} } }))
      },
    },
    {
      id: 'default-limit-100',
      description: 'Lists default to 100 items per page instead of 50',
      targets: ['pagination.default-limit-50'],
      request(req) {
        if (!isToolList(req)) return req
        const q = query(req.path)
        if (q.has('limit')) return req
        q.set('limit', '100')
        return { ...req, path: withQuery(req.path, q) }
      },
    },
    {
      id: 'limit-clamped-not-refused',
      description:
        'Out-of-range limits are clamped into 1..200 and non-numbers fall back to the default, never 400',
      targets: ['pagination.limit-over-200-400'],
      request(req) {
        if (!isToolList(req)) return req
        const q = query(req.path)
        const raw = q.get('limit')
        if (raw === null) return req
        const n = Number(raw)
        if (!Number.isInteger(n)) q.delete('limit')
        else q.set('limit', String(Math.min(200, Math.max(1, n))))
        return { ...req, path: withQuery(req.path, q) }
      },
    },
    {
      id: 'last-page-cursor-empty-string',
      description: 'The last page carries next_cursor "" instead of null',
      targets: ['pagination.page-shape'],
      response(req, res) {
        if (!isToolList(req) || res.status !== 200) return res
        return editJson(res, (b) => (b.next_cursor === null ? { ...b, next_cursor: '' } : undefined))
      },
    },
    // ---- rate limiting ----
    {
      id: 'ratelimit-remaining-off-by-one',
      description: 'RateLimit r= is computed before the current request is counted (one too many)',
      targets: ['ratelimit.exact-limit'],
      response(_req, res) {
        const value = res.headers.ratelimit
        if (!value) return res
        const ratelimit = value.replace(/;r=(\d+)/g, (_m, r: string) => `;r=${Number(r) + 1}`)
        return { ...res, headers: { ...res.headers, ratelimit } }
      },
    },
    {
      id: 'ratelimit-policy-window-ms',
      description: 'RateLimit-Policy gives the windows in milliseconds (w=10000, w=3600000)',
      targets: ['ratelimit.header-format'],
      response(_req, res) {
        const value = res.headers['ratelimit-policy']
        if (!value) return res
        const policy = value.replace(/;w=(\d+)/g, (_m, w: string) => `;w=${Number(w) * 1000}`)
        return { ...res, headers: { ...res.headers, 'ratelimit-policy': policy } }
      },
    },
    {
      id: 'ratelimit-keyed-by-client',
      description: 'The limit is keyed by client address: one throttled workspace throttles every other one',
      targets: ['ratelimit.per-workspace'],
      response: (() => {
        let blocked: { until: number; res: ProxiedResponse } | undefined
        return (_req: ProxiedRequest, res: ProxiedResponse) => {
          if (res.status === 429) {
            const wait = Number(res.headers['retry-after'] ?? 1)
            blocked = { until: Date.now() + wait * 1000, res }
            return res
          }
          return blocked && Date.now() < blocked.until ? blocked.res : res
        }
      })(),
    },
    {
      id: 'ratelimit-per-key',
      description: 'The limit is counted per key: another key of the throttled workspace is still served',
      targets: ['ratelimit.per-workspace'],
      response: (() => {
        let throttledKey: string | undefined
        return async (req: ProxiedRequest, res: ProxiedResponse, ctx) => {
          if (res.status !== 429) return res
          const key = header(req, 'authorization')
          throttledKey ??= key
          if (key === throttledKey) return res
          // A separate bucket for this key: serve it (with quota borrowed from the unthrottled primary).
          return ctx.upstream({
            ...req,
            headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` },
          })
        }
      })(),
    },
    {
      id: 'ratelimit-retry-after-missing',
      description: '429 answers lack the Retry-After header',
      targets: ['ratelimit.retry-hint', 'ratelimit.recovers-after-retry-after'],
      response(_req, res) {
        if (res.status !== 429) return res
        const { 'retry-after': _dropped, ...headers } = res.headers
        return { ...res, headers }
      },
    },
    {
      id: 'ratelimit-reset-at-window-start',
      description: "429 detail's reset_at names the window's start, not its end",
      targets: ['ratelimit.retry-hint'],
      response(_req, res) {
        if (res.status !== 429) return res
        return editJson(res, (b) => {
          const detail = ((b.error as Json).detail ?? {}) as Json
          const reset = Date.parse(String(detail.reset_at))
          const seconds = Number(detail.window_seconds ?? 10)
          const start = new Date(reset - seconds * 1000).toISOString()
          return { error: { ...(b.error as Json), detail: { ...detail, reset_at: start } } }
        })
      },
    },
    {
      id: 'stream-plain-get-500',
      description: 'A plain GET of the stream (no Upgrade) breaks the server: 500',
      targets: ['stream.plain-get-refused'],
      response(req, res) {
        if (req.method !== 'GET' || pathOnly(req.path) !== '/v1/stream') return res
        return errorAnswer(500, 'internal_error', 'failed')
      },
    },
    {
      id: 'ratelimit-detail-incomplete',
      description: '429 detail lacks reset_at and retry_after_seconds',
      targets: ['ratelimit.retry-hint'],
      response(_req, res) {
        if (res.status !== 429) return res
        return editJson(res, (b) => {
          const {
            reset_at: _r,
            retry_after_seconds: _s,
            ...detail
          } = ((b.error as Json).detail ?? {}) as Json
          return { error: { ...(b.error as Json), detail } }
        })
      },
    },
    {
      id: 'ratelimit-block-never-lifts',
      description: 'A refused key keeps getting its cached 429 after the window resets',
      targets: ['ratelimit.recovers-after-retry-after'],
      response: (() => {
        const blocked = new Map<string, ProxiedResponse>()
        return (req: ProxiedRequest, res: ProxiedResponse) => {
          const key = header(req, 'authorization') ?? ''
          if (res.status === 429) blocked.set(key, res)
          return blocked.get(key) ?? res
        }
      })(),
    },
    // ---- creation codes ----
    {
      id: 'agent-create-200',
      description: 'Creating an agent answers 200 instead of 201',
      targets: ['resources.created-codes'],
      response(req, res) {
        return req.method === 'POST' && pathOnly(req.path) === '/v1/agents' && res.status === 201
          ? { ...res, status: 200 }
          : res
      },
    },
    {
      id: 'agent-delete-200-with-body',
      description: 'Deleting an agent answers 200 with the deleted agent instead of an empty 204',
      targets: ['resources.created-codes'],
      async request(req, ctx) {
        if (req.method !== 'DELETE' || !/^\/v1\/agents\/[^/]+$/.test(pathOnly(req.path))) return req
        const before = await ctx.upstream({ ...req, method: 'GET', body: '' })
        const res = await ctx.upstream(req)
        return res.status === 204 ? { ...before, status: 200 } : res
      },
    },
    // ---- tools ----
    {
      id: 'tool-input-schema-ref-refused',
      description: 'Registration refuses an input_schema that is a {"$ref"} (the validator demands "type")',
      targets: ['tools.input-schema-reference'],
      request(req) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/tools') return req
        const schema = parseJson(req.body)?.input_schema as Json | undefined
        if (!schema || typeof schema !== 'object' || !('$ref' in schema)) return req
        return errorAnswer(400, 'invalid_request', 'input_schema.type is required', { field: 'input_schema' })
      },
    },
    {
      id: 'tool-schema-id-kept-across-tools',
      description:
        'The schema validator keeps every $id it compiled: a second tool whose input_schema has an $id already seen is refused',
      targets: ['tools.schema-ids-stand-alone'],
      request: (() => {
        const seen = new Set<string>()
        return (req: ProxiedRequest) => {
          if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/tools') return req
          const id = (parseJson(req.body)?.input_schema as Json | undefined)?.$id
          if (typeof id !== 'string') return req
          if (!seen.has(id)) {
            seen.add(id)
            return req
          }
          return errorAnswer(400, 'invalid_request', `schema with key or id "${id}" already exists`, {
            field: 'input_schema',
          })
        }
      })(),
    },
    {
      id: 'tool-duplicate-name-accepted',
      description: 'Registering a name already active answers 201 with a second tool instead of 409',
      targets: ['tools.registration-shape'],
      response(req, res) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/tools' || res.status !== 409) return res
        const body = parseJson(req.body) ?? {}
        return {
          status: 201,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ...body, tool_id: 'tool_duplicate', status: 'active', retired_at: null }),
        }
      },
    },
    {
      id: 'tool-register-drops-scopes',
      description: 'The registration answer drops the required_scopes of the policy binding',
      targets: ['tools.registration-shape'],
      response(req, res) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/tools' || res.status !== 201) return res
        return editJson(res, (b) => ({
          ...b,
          policy_binding: { ...(b.policy_binding as Json), required_scopes: [] },
        }))
      },
    },
    {
      id: 'tool-timeout-unchecked',
      description:
        'An http tool registration takes any timeout_ms (0 included), as though it were never read',
      targets: ['tools.registration-refusals'],
      request(req) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/tools') return req
        const body = parseJson(req.body)
        const config = body?.config as Json | undefined
        if (body?.provider !== 'http' || !config || config.timeout_ms === undefined) return req
        const { timeout_ms: _dropped, ...rest } = config
        return { ...req, body: JSON.stringify({ ...body, config: rest }) }
      },
    },
    {
      id: 'tool-call-without-run',
      description:
        "The http provider posts the step's input alone: the tool's endpoint is not told the run, step and tool",
      targets: ['tools.provider-calls'],
      delivery(req) {
        const body = parseJson(req.body)
        if (!body || 'event' in body || !('run_id' in body) || !('input' in body)) return req
        return { ...req, body: JSON.stringify(body.input) }
      },
    },
    {
      id: 'tool-retired-unannounced',
      description: 'Retiring a tool is never announced: tool.retired does not reach its subscribers',
      targets: ['tools.lifecycle-events'],
      delivery(req) {
        if (parseJson(req.body)?.event !== 'tool.retired') return req
        return { status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }
      },
    },
    {
      id: 'retired-tool-404',
      description: 'A retired tool is hard-deleted from reads: GET /v1/tools/{id} answers 404',
      targets: ['tools.retired-stays-readable'],
      response(req, res) {
        if (req.method !== 'GET' || !/^\/v1\/tools\/[^/]+$/.test(pathOnly(req.path))) return res
        if (parseJson(res.body)?.status !== 'retired') return res
        return errorAnswer(404, 'not_found', 'no such tool')
      },
    },
    {
      id: 'retire-twice-404',
      description: 'Retiring an already retired tool answers 404 instead of 200',
      targets: ['tools.retired-stays-readable'],
      response: (() => {
        const retired = new Set<string>()
        return (req: ProxiedRequest, res: ProxiedResponse) => {
          if (req.method !== 'DELETE' || !/^\/v1\/tools\/[^/]+$/.test(pathOnly(req.path))) return res
          const path = pathOnly(req.path)
          if (!retired.has(path)) {
            if (res.status < 300) retired.add(path)
            return res
          }
          return errorAnswer(404, 'not_found', 'no such tool')
        }
      })(),
    },
    // ---- validation ----
    {
      id: 'validation-answers-422',
      description: 'Schema violations answer 422 instead of 400',
      targets: ['validation.spec-violations-400', 'validation.fuzz-400'],
      response(req, res) {
        if (req.method !== 'POST' || res.status !== 400) return res
        return { ...res, status: 422 }
      },
    },
    {
      id: 'validation-code-nonstandard',
      description: 'Schema violations answer 400 with code validation_error instead of invalid_request',
      targets: ['validation.fuzz-invalid-request-code'],
      response(req, res) {
        if (req.method !== 'POST' || res.status !== 400) return res
        return recode(res, 'validation_error')
      },
    },
    {
      id: 'empty-body-500',
      description: 'An empty application/json body on a typed route (tools, webhooks) breaks the server: 500',
      targets: ['validation.malformed-json-400'],
      response(req, res) {
        if (req.method !== 'POST' || req.body !== '' || !/^\/v1\/(tools|webhooks)$/.test(pathOnly(req.path)))
          return res
        return errorAnswer(500, 'internal_error', 'failed')
      },
    },
    {
      id: 'invalid-request-detail-dropped',
      description: 'A 400 invalid_request answers an empty detail: the issues and fields are lost',
      targets: ['validation.invalid-request-detail'],
      response(req, res) {
        if (req.method !== 'POST' || res.status !== 400) return res
        return editJson(res, (b) => ({ ...b, error: { ...(b.error as Json), detail: {} } }))
      },
    },
    {
      id: 'task-priority-clamped',
      description: 'A task priority outside 1..5 is clamped into range instead of refused',
      targets: ['validation.spec-violations-400'],
      request(req) {
        if (req.method !== 'POST' || !/^\/v1\/agents\/[^/]+\/tasks$/.test(pathOnly(req.path))) return req
        const body = parseJson(req.body)
        if (!body || typeof body.priority !== 'number') return req
        const priority = Math.min(5, Math.max(1, body.priority))
        return { ...req, body: JSON.stringify({ ...body, priority }) }
      },
    },
    {
      id: 'typed-field-null-accepted',
      description:
        'An agent with capabilities null is created as if the field were absent (201), though §2 types it an array',
      targets: ['validation.spec-violations-400'],
      request(req) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/agents') return req
        const body = parseJson(req.body)
        if (!body || body.capabilities !== null) return req
        const { capabilities: _null, ...rest } = body
        return { ...req, body: JSON.stringify(rest) }
      },
    },
    {
      id: 'numbers-rounded-as-doubles',
      description:
        'A body is read as most JSON readers read it: an integer no double holds is rounded and kept, not refused',
      targets: ['validation.numbers-kept-or-refused'],
      request(req) {
        if (req.method !== 'POST') return req
        const body = parseJson(req.body)
        return body ? { ...req, body: JSON.stringify(body) } : req
      },
    },
  ]
}
