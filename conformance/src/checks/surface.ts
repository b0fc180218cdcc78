/**
 * The contract's documented answers, operation by operation: the requests off the happy path that the other
 * families reach only for a few operations (no token, a token without the scope, an unknown id, a body that is not
 * JSON or is too large, a bad `limit`), and the error paths off the documented surface (unknown route, wrong method,
 * wrong version prefix, malformed Authorization). The spec fixes 401 and 404 (§5.2, §5.6, §7) and the envelope
 * (§7); which 4xx answers the others, and that they carry the envelope, is the reference profile's decision (the
 * contract documents it), so these checks are profile: they show the contract coverage report what is exercised,
 * and a foreign deployment is never failed on them.
 */
import type { Check, CheckContext } from '../check.js'
import { settingName, tokenName } from '../config.js'
import type { Operation } from '../contract.js'
import type { HttpResponse } from '../http.js'
import { assert } from '../types.js'
import { describeAnswer, sendUpgrade, WEBSOCKET_HANDSHAKE } from '../upgrade-request.js'
import { short } from '../wait.js'
import { envelopeProblems } from './assertions.js'

/** Ids no deployment has issued: an unknown resource of every kind. */
export const concrete = (op: Operation) =>
  op.template.replace(/\{([^}]+)\}/g, (_m, name: string) => `conf-unknown-${name}`)
const documents = (op: Operation, status: number) => op.responses[String(status)] !== undefined
const hasBody = (op: Operation) => op.requestSchemaPointer !== undefined
const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])
const pointerOf = (template: string) => template.replace(/~/g, '~0').replace(/\//g, '~1')

/**
 * The path with every id one character longer than the contract's `maxLength` for it, or undefined when the
 * contract bounds none of the operation's path parameters.
 */
function overlongPath(ctx: CheckContext, op: Operation): string | undefined {
  const item = `/paths/${pointerOf(op.template)}`
  const params = [
    ...asList(ctx.contract.at(`${item}/parameters`)),
    ...asList(ctx.contract.at(`${item}/${op.method}/parameters`)),
  ]
  const bounds = new Map<string, number>()
  for (const raw of params) {
    const p = ctx.contract.deref(raw as Record<string, unknown>)
    const schema = ctx.contract.deref(p?.schema as Record<string, unknown> | undefined)
    if (p?.in === 'path' && typeof p.name === 'string' && typeof schema?.maxLength === 'number')
      bounds.set(p.name, schema.maxLength)
  }
  if (bounds.size === 0) return undefined
  return op.template.replace(/\{([^}]+)\}/g, (_m, name: string) => 'x'.repeat((bounds.get(name) ?? 63) + 1))
}

/**
 * The contract's example request body of the operation, made run-unique where it names something the deployment
 * would create (a tool's or agent's name) and pointed at nowhere for a webhook; `{}` when it has none.
 */
function exampleBody(ctx: CheckContext, op: Operation): string {
  if (!op.requestSchemaPointer) return '{}'
  const media = ctx.contract.at(op.requestSchemaPointer.replace(/\/schema$/, ''))
  const example = media?.example
  if (!example || typeof example !== 'object' || Array.isArray(example)) return '{}'
  const body = { ...(example as Record<string, unknown>) }
  if (typeof body.name === 'string') body.name = ctx.name('narrow-probe')
  if (typeof body.url === 'string') body.url = 'https://conformance.invalid/hooks'
  return JSON.stringify(body)
}
/** The body size the reference refuses (its default limit is 1 MiB); a deployment with a larger limit answers 400. */
const TOO_LARGE_BYTES = 1024 * 1024 + 1024

interface Probe {
  what: string
  op: Operation
  expect: number[]
  send(ctx: CheckContext): Promise<HttpResponse>
}

/** Operations of the API itself (under /v1, not the documentation and health endpoints). */
export function apiOperations(ctx: CheckContext): Operation[] {
  return ctx.contract.operations.filter((op) => op.template.startsWith('/v1/'))
}

function probes(ctx: CheckContext): Probe[] {
  const out: Probe[] = []
  for (const op of apiOperations(ctx)) {
    const path = concrete(op)
    const method = op.method.toUpperCase()
    const body = hasBody(op) ? { rawBody: '{}', headers: { 'content-type': 'application/json' } } : {}
    if (documents(op, 401))
      out.push({
        what: 'no Authorization header',
        op,
        expect: [401],
        send: (c) => c.http.request(method, path, { ...body, token: null }),
      })
    if (documents(op, 404) && op.template.includes('{'))
      out.push({
        what: 'an unknown id',
        op,
        // With a body, judging the body first (400 for `{}`) is as legitimate as looking the id up first.
        expect: hasBody(op) ? [404, 400] : [404],
        // A body the operation may refuse as well: whichever it judges first, the answer is documented.
        send: (c) => c.http.request(method, path, body),
      })
    if (documents(op, 415))
      out.push({
        what: 'a text/plain body',
        op,
        expect: [415],
        send: (c) =>
          c.http.request(method, path, { rawBody: 'not json', headers: { 'content-type': 'text/plain' } }),
      })
    if (documents(op, 413))
      out.push({
        what: `a ${TOO_LARGE_BYTES}-byte body`,
        op,
        expect: [413],
        send: (c) =>
          c.http.request(method, path, {
            rawBody: JSON.stringify({ padding: 'x'.repeat(TOO_LARGE_BYTES) }),
            headers: { 'content-type': 'application/json' },
          }),
      })
    const overlong = documents(op, 400) ? overlongPath(ctx, op) : undefined
    if (overlong)
      out.push({
        what: 'an id longer than the contract’s maxLength',
        op,
        // The contract bounds every path id (maxLength): a longer one is a schema mismatch (§7 400), and it is
        // also an id nobody issued (§5.6 404); either is documented, with the envelope.
        expect: [400, 404],
        send: (c) => c.http.request(method, overlong, body),
      })
    if (documents(op, 400) && method === 'GET' && !op.template.includes('{') && op.template !== '/v1/graphql')
      out.push({
        what: 'limit=0',
        op,
        expect: [400],
        send: (c) => c.http.get(`${path}?limit=0`),
      })
    if (documents(op, 403) && ctx.config.tokens.narrowScope) {
      out.push({
        what: 'the narrow-scope token',
        op,
        // Refused (403) where it lacks the scope; where it has it, any documented answer but 401 and 5xx.
        expect: Object.keys(op.responses)
          .map(Number)
          .filter((s) => s !== 401 && s < 500),
        send: async (c) => {
          const res = await sendScoped(c, 'narrowScope', op)
          if (res.status !== 401 && res.status !== 403) allowedToNarrow.get(c)?.push(op)
          return res
        },
      })
    }
  }
  return out
}

/** Per run: the operations the narrow token was let through (neither 401 nor 403), where it holds the scope. */
const allowedToNarrow = new WeakMap<CheckContext, Operation[]>()

/**
 * The operation as a scoped token sends it: the contract's example body, so a deployment that judges the body before
 * the scope reaches the scope too; what a token holding the scope created is undone.
 */
async function sendScoped(
  ctx: CheckContext,
  role: 'narrowScope' | 'otherScope',
  op: Operation,
): Promise<HttpResponse> {
  const path = concrete(op)
  const valid = hasBody(op)
    ? { rawBody: exampleBody(ctx, op), headers: { 'content-type': 'application/json' } }
    : {}
  const res = await ctx.as(role).request(op.method.toUpperCase(), path, valid)
  const id = res.status < 300 ? createdId(res.body) : undefined
  if (id) ctx.cleanup(`delete ${path}/${id}`, (http) => http.request('DELETE', `${path}/${id}`))
  return res
}

/**
 * The 403 the narrow token cannot produce, on the operations its scopes allow (the reference's narrow token holds
 * agents:read, so GET /v1/agents and GET /v1/agents/{agent_id} answer it 200 or 404): sent again with the
 * other-scope token, whose scopes exclude the narrow token's, each is refused 403 with the envelope.
 */
async function otherScopeMismatches(ctx: CheckContext, ops: Operation[]): Promise<string[]> {
  if (!ctx.config.tokens.otherScope) {
    if (ops.length > 0)
      ctx.partial(
        `the 403 of ${ops.length} operations the narrow token may call did not run: no ${tokenName('otherScope')} given`,
      )
    return []
  }
  const wrong: string[] = []
  await Promise.all(
    ops.map(async (op) => {
      const res = await sendScoped(ctx, 'otherScope', op)
      const what = `${op.method.toUpperCase()} ${op.template} with the other-scope token`
      if (res.status !== 403)
        wrong.push(
          `${what} (the narrow token's operation) answered ${res.status}, not 403 (its scopes must exclude the narrow token's: ${settingName('other-scope-token')})`,
        )
      else if (envelopeProblems(res.body).length > 0)
        wrong.push(`${what} answered 403 without the error envelope (${envelopeProblems(res.body)[0]})`)
    }),
  )
  return wrong
}

function createdId(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined
  const o = body as Record<string, unknown>
  const id = o.id ?? o.tool_id ?? o.webhook_id ?? o.agent_id
  return typeof id === 'string' ? id : undefined
}

/** Runs probes a few at a time; returns the ones whose answer was not what they expect. */
async function mismatches(ctx: CheckContext, list: Probe[]): Promise<string[]> {
  const wrong: string[] = []
  for (let i = 0; i < list.length; i += 6) {
    await Promise.all(
      list.slice(i, i + 6).map(async (p) => {
        const res = await p.send(ctx)
        const problems: string[] = []
        if (!p.expect.includes(res.status)) problems.push(`answered ${res.status}, not ${p.expect.join('/')}`)
        else if (res.status >= 400 && envelopeProblems(res.body).length > 0)
          problems.push(
            `answered ${res.status} without the error envelope (${envelopeProblems(res.body)[0]})`,
          )
        if (problems.length > 0)
          wrong.push(`${p.op.method.toUpperCase()} ${p.op.template} with ${p.what} ${problems.join('; ')}`)
      }),
    )
  }
  return wrong
}

export const surfaceChecks: Check[] = [
  {
    id: 'surface.documented-statuses',
    title:
      'Every operation answers no token 401, an unknown id 404, an over-long id 400, a non-JSON body 415, an oversized body 413, limit=0 400, a token without the scope 403 (the other-scope token where the narrow one holds it), as its contract documents, with the envelope',
    level: 'profile',
    clauses: ['S5.2', 'S5.6', 'S7.1'],
    overlap: true,
    async run(ctx) {
      allowedToNarrow.set(ctx, [])
      const list = probes(ctx)
      const wrong = await mismatches(ctx, list)
      const allowed = allowedToNarrow.get(ctx) ?? []
      wrong.push(...(await otherScopeMismatches(ctx, allowed)))
      const total = list.length + (ctx.config.tokens.otherScope ? allowed.length : 0)
      assert(wrong.length === 0, `${wrong.length} of ${total} probes: ${short(wrong.join(' | '), 1500)}`)
    },
  },
  {
    id: 'surface.error-paths',
    title:
      'Requests off the documented surface (unknown route, wrong method, other version prefix, malformed Authorization) answer 404, 405 (whose Allow names the methods the path answers) or 404, 404, 401 with the envelope',
    level: 'profile',
    clauses: ['S7.1', 'S9.1'],
    async run(ctx) {
      const cases: Array<[string, number | number[], () => Promise<HttpResponse>]> = [
        ['GET /v1/conf-unknown-route', 404, () => ctx.http.get('/v1/conf-unknown-route')],
        ['PUT /v1/tools', [405, 404], () => ctx.http.request('PUT', '/v1/tools', { body: {} })],
        // Off the versioned API, where no rate limit or identity applies: sent without a token, so the sweep checks
        // (which judge the API's authenticated answers) do not count them.
        ['GET /v2/tools', 404, () => ctx.http.get('/v2/tools', { token: null })],
        ['GET /tools', 404, () => ctx.http.get('/tools', { token: null })],
        [
          'GET /v1/tools with Authorization: Basic',
          401,
          () => ctx.http.get('/v1/tools', { headers: { authorization: 'Basic Y29uZjpjb25m' } }),
        ],
        [
          'GET /v1/tools with Authorization: Bearer (no token)',
          401,
          () => ctx.http.get('/v1/tools', { headers: { authorization: 'Bearer' } }),
        ],
      ]
      const wrong: string[] = []
      for (const [what, status, send] of cases) {
        const allowed = Array.isArray(status) ? status : [status]
        const res = await send()
        if (!allowed.includes(res.status))
          wrong.push(`${what} answered ${res.status}, not ${allowed.join('/')}`)
        else if (envelopeProblems(res.body).length > 0)
          wrong.push(`${what} answered ${res.status} without the envelope: ${envelopeProblems(res.body)[0]}`)
        else if (res.status === 405) {
          // RFC 9110 §15.5.6: a 405 names the methods the path answers (/v1/tools: GET and POST), in Allow.
          const allow = (res.headers.allow ?? '').split(',').map((m) => m.trim().toUpperCase())
          const lacking = ['GET', 'POST'].filter((m) => !allow.includes(m))
          if (lacking.length > 0 || allow.includes('PUT'))
            wrong.push(
              `${what} answered 405 with Allow: ${res.headers.allow ?? '(none)'}, not the methods /v1/tools answers (GET, POST)`,
            )
        }
      }
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
  {
    id: 'surface.upgrade-ignored',
    title:
      'A request asking to upgrade to a protocol the deployment does not switch to (h2c, as curl --http2 sends on http://; a WebSocket handshake of a REST path, or by POST) is answered as the same request without the ask, or switched where switching is allowed',
    level: 'profile',
    clauses: ['S1.9', 'S1.12'],
    async run(ctx) {
      // RFC 9110 §7.8: a server may ignore Upgrade and answer over HTTP/1.1, or switch (101). `curl --http2` on an
      // http:// URL asks for h2c on every request; a server that refuses every upgrade but a WebSocket's (the
      // reference once answered such requests 404, as no upgrade path) breaks every operation for it. Each request
      // is sent twice, plainly and with the ask: whatever the deployment answers the plain one, the other gets the
      // same status. A WebSocket handshake is a GET (RFC 6455 §4.1), so a POST asking for one is never switched.
      const h2c = {
        connection: 'Upgrade, HTTP2-Settings',
        upgrade: 'h2c',
        'http2-settings': 'AAMAAABkAARAAAAAAAIAAAAA',
      }
      const tools = `${ctx.http.baseUrl}/v1/tools?limit=1`
      const stream = `${ctx.config.streamUrl.replace(/^ws/, 'http')}/v1/stream`
      const asks: Array<{
        what: string
        url: string
        ask: Record<string, string>
        post?: true
        mayswitch?: true
      }> = [
        { what: 'GET /v1/tools asking for h2c', url: tools, ask: h2c, mayswitch: true },
        { what: 'GET /v1/tools as a WebSocket handshake', url: tools, ask: { ...WEBSOCKET_HANDSHAKE } },
        {
          what: 'POST /v1/stream asking for a WebSocket',
          url: stream,
          ask: { ...WEBSOCKET_HANDSHAKE },
          post: true,
        },
      ]
      if (ctx.config.graphqlUrl)
        asks.push({
          what: 'a GraphQL query by GET asking for h2c',
          url: `${ctx.config.graphqlUrl}?query=${encodeURIComponent('{ __typename }')}`,
          ask: h2c,
          mayswitch: true,
        })
      const authorization = `Bearer ${ctx.config.tokens.primary}`
      const wrong: string[] = []
      for (const { what, url, ask, post, mayswitch } of asks) {
        const plain = await ctx.http.request(post ? 'POST' : 'GET', url, post ? { body: {} } : {})
        const asked = await sendUpgrade(
          ctx,
          url,
          { ...ask, authorization },
          post ? { method: 'POST', body: '{}' } : {},
        )
        if ('error' in asked) wrong.push(`${what}: ${describeAnswer(asked)}`)
        else if (asked.switched) {
          if (!mayswitch) wrong.push(`${what} switched protocols (101)`)
        } else if (asked.status !== plain.status)
          wrong.push(
            `${what} answered ${asked.status}, the same request without it ${plain.status}: ${short(asked.body, 200)}`,
          )
      }
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
]
