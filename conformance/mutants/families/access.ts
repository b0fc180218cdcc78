/**
 * Mutants for authentication, the scope gate, idempotency, ingestion and workspace scoping. Each simulates one
 * plausible server bug.
 */
import { createHash, randomBytes } from 'node:crypto'
import { canonicalize } from '../../src/canonical.js'
import {
  editJson,
  editPageItems,
  header,
  type Json,
  type Mutant,
  type MutantContext,
  type ProxiedRequest,
  type ProxiedResponse,
  parseJson,
  pathOnly,
  query,
} from '../proxy.js'

const AGENT_CREATE = /^\/v1\/agents$/
const RUN_START = /^\/v1\/agents\/[^/]+\/runs$/
const INGEST = /^\/v1\/grid\/connectors\/[^/]+\/ingest$/
const RECORDS = /^\/v1\/grid\/connectors\/[^/]+\/records$/

const isPost = (req: ProxiedRequest, re: RegExp) => req.method === 'POST' && re.test(pathOnly(req.path))
const isGet = (req: ProxiedRequest, re: RegExp) => req.method === 'GET' && re.test(pathOnly(req.path))

const bearer = (token: string | undefined) => (token ? `Bearer ${token}` : undefined)
const fromSecond = (req: ProxiedRequest, ctx: MutantContext) =>
  ctx.tokens.secondWorkspace !== undefined &&
  header(req, 'authorization') === bearer(ctx.tokens.secondWorkspace)
const asPrimary = (req: ProxiedRequest, ctx: MutantContext): ProxiedRequest => ({
  ...req,
  headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` },
})

/** Every item of a list as the request's caller sees it, page after page (bounded): an unfiltered list shows all. */
async function everyItem(req: ProxiedRequest, ctx: MutantContext): Promise<unknown[]> {
  const items: unknown[] = []
  let cursor: string | null = null
  for (let page = 0; page < 50; page++) {
    const path = `${pathOnly(req.path)}?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
    const body = parseJson((await ctx.upstream({ ...req, path })).body)
    if (!Array.isArray(body?.data)) break
    items.push(...body.data)
    cursor = typeof body.next_cursor === 'string' ? body.next_cursor : null
    if (!cursor) break
  }
  return items
}

function errorAnswer(status: number, code: string, message: string, detail: Json = {}): ProxiedResponse {
  return {
    status,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      error: { code, message, detail, request_id: `req_${randomBytes(6).toString('hex')}` },
    }),
  }
}

/** RFC 6962-shaped tree over SHA-256, but without the 0x00 leaf and 0x01 node prefixes. */
function unprefixedMerkleRoot(leaves: Buffer[]): string {
  const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest()
  const mth = (items: Buffer[]): Buffer => {
    if (items.length === 0) return sha()
    if (items.length === 1) return sha(items[0]!)
    let k = 1
    while (k * 2 < items.length) k *= 2
    return sha(mth(items.slice(0, k)), mth(items.slice(k)))
  }
  return mth(leaves).toString('hex')
}

/**
 * A foreign read that answers 404 is retried as the owner: when the owner would see the resource, `leak` decides
 * what the other workspace gets instead.
 */
function foreignRead(
  route: RegExp,
  leak: (owner: ProxiedResponse, res: ProxiedResponse) => ProxiedResponse,
): Mutant['response'] {
  return async (req, res, ctx) => {
    if (!isGet(req, route) || res.status !== 404 || !fromSecond(req, ctx)) return res
    const owner = await ctx.upstream(asPrimary(req, ctx))
    return owner.status === 200 ? leak(owner, res) : res
  }
}

export function accessMutants(): Mutant[] {
  const inFlight = new Set<string>()
  const kept429 = new Map<string, ProxiedResponse>()
  const bodiesByKey = new Map<string, string>()
  const startsByBody = new Map<string, { key: string; res: ProxiedResponse }>()
  const ingestByPath = new Map<string, ProxiedResponse>()
  /**
   * Marks a keyed agent create as in flight: whether one with its token and key is in flight already (undefined when
   * it is no keyed agent create). Only the first is forwarded with its key, so its answer ends the flight.
   */
  const alsoInFlight = (req: ProxiedRequest): boolean | undefined => {
    const key = header(req, 'idempotency-key')
    if (!isPost(req, AGENT_CREATE) || !key) return undefined
    const slot = `${header(req, 'authorization')} ${key}`
    if (inFlight.has(slot)) return true
    inFlight.add(slot)
    return false
  }
  const landed = (req: ProxiedRequest, res: ProxiedResponse): ProxiedResponse => {
    const key = header(req, 'idempotency-key')
    if (key) inFlight.delete(`${header(req, 'authorization')} ${key}`)
    return res
  }
  const quotaRefusalsByKey = new Map<string, ProxiedResponse>()
  const replayed = (res: ProxiedResponse): ProxiedResponse => ({
    ...res,
    headers: { ...res.headers, 'idempotent-replayed': 'true' },
  })
  return [
    // ---- authentication ----
    {
      id: 'auth-scheme-optional',
      description: 'An Authorization header without the Bearer scheme is taken as a bare token and accepted',
      targets: ['auth.malformed-token-401'],
      request(req, ctx) {
        return header(req, 'authorization') === ctx.tokens.primary ? asPrimary(req, ctx) : req
      },
    },
    {
      id: 'bearer-token-found-anywhere',
      description:
        'The token is searched for anywhere in the Authorization header: another scheme ending in Bearer, text after the token, or a character before or after it are let through',
      targets: ['auth.malformed-token-401'],
      request(req, ctx) {
        const sent = header(req, 'authorization')
        const primary = ctx.tokens.primary
        return sent?.includes(primary) && sent !== `Bearer ${primary}` ? asPrimary(req, ctx) : req
      },
    },
    {
      id: 'bearer-scheme-exact',
      description:
        'Only "Bearer" with one space before the token is read: the scheme in lower case or two spaces are refused 401',
      targets: ['auth.bearer-forms'],
      request(req) {
        const sent = header(req, 'authorization') ?? ''
        return /^bearer /.test(sent) || /^Bearer {2}/.test(sent)
          ? errorAnswer(401, 'unauthenticated', 'The Authorization header is malformed', {
              reason: 'malformed',
            })
          : req
      },
    },
    {
      id: 'revoked-key-keeps-connections',
      description:
        "A key's revoke is looked at only when a connection opens: the stream and graphql-ws connections it holds run on",
      targets: ['stream.revoked-key-ends-connections'],
      keepsOpen: (code) => code === 4401,
    },
    {
      id: 'expired-key-keeps-connections',
      description:
        "A key's expiry is looked at only when a connection opens (a revoke still ends them): the stream and graphql-ws connections of a key that expired run on",
      targets: ['stream.expired-key-ends-connections'],
      keepsOpen: (code, reason) => code === 4401 && /expired/i.test(reason),
      streamMessage: (message) => (expiryNotice(message) ? undefined : message),
    },
    revokedTokenUpgradeAccepted(),
    wrongSecretLocksTheKey(),
    {
      id: 'revoked-stream-says-other-words',
      description:
        'The stream tells a connection its key was revoked in words of its own ("no longer valid"), not the message REST\'s 401 gives the token from then on: a client matching on one misses the other',
      targets: ['stream.revoked-key-ends-connections'],
      streamMessage(message) {
        const error = message.error
        if (message.type !== 'error' || !error || typeof error !== 'object' || Array.isArray(error))
          return message
        const e = error as Json
        return e.code === 'unauthenticated'
          ? { ...message, error: { ...e, message: 'The bearer token is no longer valid' } }
          : message
      },
    },
    {
      id: 'stream-access-token-ignored',
      description:
        'The stream reads the token from the Authorization header only: one in the access_token query parameter is as none',
      targets: ['stream.access-token-query'],
      upgrade(headers) {
        return headers.authorization === undefined ? { ...headers, authorization: '' } : headers
      },
    },
    {
      id: 'revoked-key-accepted',
      description: 'A revoked key is still accepted: its revocation is never looked at',
      targets: ['auth.revoked-token-401'],
      request(req, ctx) {
        const revoked = bearer(ctx.tokens.revoked)
        return revoked && header(req, 'authorization') === revoked ? asPrimary(req, ctx) : req
      },
    },
    {
      id: 'token-secret-unchecked',
      description: 'A token is looked up by its key id and its secret part is never compared',
      targets: ['auth.malformed-token-401'],
      request(req, ctx) {
        const sent = /^Bearer (.+)$/.exec(header(req, 'authorization') ?? '')?.[1]
        const primary = ctx.tokens.primary
        const keyId = (t: string) => t.split('_').slice(0, 2).join('_')
        return sent && sent !== primary && sent.length === primary.length && keyId(sent) === keyId(primary)
          ? asPrimary(req, ctx)
          : req
      },
    },
    {
      id: 'tools-list-refuses-primary',
      description: 'Listing tools demands an admin scope the ordinary primary token lacks (403)',
      targets: ['auth.valid-token-accepted'],
      request(req) {
        return isGet(req, /^\/v1\/tools$/)
          ? errorAnswer(403, 'policy_denied', 'tools:admin is required', {
              envelope: 'api_key',
              violation: 'missing_scope',
              observed: ['agents:read', 'tools:read'],
              limit: ['tools:admin'],
              escalation_queue: 'security',
            })
          : req
      },
    },
    {
      id: 'www-authenticate-without-error',
      description:
        '401 for a bad token carries a bare WWW-Authenticate: Bearer realm, without error="invalid_token"',
      targets: ['auth.www-authenticate'],
      response(_req, res) {
        if (res.status !== 401 || !res.headers['www-authenticate']) return res
        return { ...res, headers: { ...res.headers, 'www-authenticate': 'Bearer realm="agentops"' } }
      },
    },

    {
      id: 'www-authenticate-missing',
      description: '401 answers carry no WWW-Authenticate challenge at all',
      targets: ['auth.www-authenticate'],
      response(_req, res) {
        if (res.status !== 401) return res
        const { 'www-authenticate': _dropped, ...headers } = res.headers
        return { ...res, headers }
      },
    },

    {
      id: 'www-authenticate-error-without-token',
      description: 'A 401 for a request without any token names error="invalid_token" in its challenge',
      targets: ['auth.www-authenticate'],
      response(req, res) {
        if (res.status !== 401 || header(req, 'authorization') !== undefined) return res
        return { ...res, headers: { ...res.headers, 'www-authenticate': 'Bearer error="invalid_token"' } }
      },
    },
    {
      id: 'refusal-reason-dropped',
      description: "A 401's detail no longer says why the token was refused",
      targets: ['auth.refusal-reason'],
      response(_req, res) {
        if (res.status !== 401) return res
        return editJson(res, (b) => ({ ...b, error: { ...(b.error as Json), detail: {} } }))
      },
    },
    {
      id: 'refusal-reason-always-unknown',
      description: 'Every 401 says the token is unknown, a request without one too',
      targets: ['auth.refusal-reason'],
      response(_req, res) {
        if (res.status !== 401) return res
        return editJson(res, (b) => ({
          ...b,
          error: { ...(b.error as Json), detail: { reason: 'unknown' } },
        }))
      },
    },

    // ---- scope gate ----
    {
      id: 'narrow-token-refused-everywhere',
      description: 'A token lacking any scope is refused on every route, even the ones its scopes allow',
      targets: ['authz.narrow-scope-still-reads'],
      request(req, ctx) {
        const narrow = bearer(ctx.tokens.narrowScope)
        return narrow && header(req, 'authorization') === narrow
          ? errorAnswer(403, 'policy_denied', 'scope missing', {
              envelope: 'api_key',
              violation: 'missing_scope',
              observed: ['agents:read'],
              limit: ['agents:write'],
              escalation_queue: 'security',
            })
          : req
      },
    },
    {
      id: 'tool-scopes-of-another-key',
      description:
        "The gate holds a tool's required_scopes against a key with every scope, not the key that started the run",
      targets: ['authz.tool-required-scopes'],
      request(req, ctx) {
        const runsOnly = bearer(ctx.tokens.runsOnly)
        return runsOnly && isPost(req, RUN_START) && header(req, 'authorization') === runsOnly
          ? { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` } }
          : req
      },
    },
    {
      id: 'gate-denial-generic-violation',
      description:
        'A run the gate stopped reads a generic violation, not the limit it reached (max_tool_calls), in its trace and outcome',
      targets: ['authz.gate-decisions-recorded'],
      response(req, res) {
        if (req.method !== 'GET' || !pathOnly(req.path).startsWith('/v1/runs/')) return res
        return { ...res, body: res.body.split('"max_tool_calls"').join('"limit_exceeded"') }
      },
    },
    {
      id: 'scope-detail-strings',
      description:
        'policy_denied detail renders observed/limit as comma-joined strings and a generic violation',
      targets: ['authz.scope-detail-values'],
      response(_req, res) {
        if (res.status !== 403) return res
        return editJson(res, (b) => {
          const error = (b.error ?? {}) as Json
          const detail = (error.detail ?? {}) as Json
          const join = (v: unknown) => (Array.isArray(v) ? v.join(',') : v)
          return {
            ...b,
            error: {
              ...error,
              detail: {
                ...detail,
                violation: 'policy_violation',
                observed: join(detail.observed),
                limit: join(detail.limit),
              },
            },
          }
        })
      },
    },

    // ---- idempotency ----
    {
      id: 'replay-answers-200',
      // A replay's code is not shown (spec §8), so this breaks the reference profile's choice only: the stored answer
      // repeated, its code too.
      description: 'A replayed create answers 200 instead of repeating the stored 201',
      targets: ['idempotency.replay-byte-identical'],
      response(req, res) {
        return isPost(req, AGENT_CREATE) &&
          res.headers['idempotent-replayed'] === 'true' &&
          res.status === 201
          ? { ...res, status: 200 }
          : res
      },
    },
    {
      id: 'agent-create-ignores-key',
      description: 'Agent creation never consults the Idempotency-Key: a repeat creates a second agent',
      targets: ['idempotency.replay-same-response', 'idempotency.replay-byte-identical'],
      request(req) {
        if (!isPost(req, AGENT_CREATE) || !header(req, 'idempotency-key')) return req
        const { 'idempotency-key': _dropped, ...headers } = req.headers
        return { ...req, headers }
      },
    },
    {
      id: 'run-start-ignores-key',
      description: 'Run starts never consult the Idempotency-Key: a repeat starts a second run',
      targets: ['idempotency.run-start-replay'],
      request(req) {
        if (!isPost(req, RUN_START) || !header(req, 'idempotency-key')) return req
        const { 'idempotency-key': _dropped, ...headers } = req.headers
        return { ...req, headers }
      },
    },
    {
      id: 'run-start-keyed-by-body',
      description:
        'Run starts are deduplicated by request body, not by key: the same start under a fresh key replays the old run',
      targets: ['idempotency.run-start-replay'],
      request(req) {
        const key = header(req, 'idempotency-key')
        if (!isPost(req, RUN_START) || !key) return req
        const stored = startsByBody.get(`${header(req, 'authorization')} ${req.path} ${req.body}`)
        return stored && stored.key !== key ? replayed(stored.res) : req
      },
      response(req, res) {
        const key = header(req, 'idempotency-key')
        const slot = `${header(req, 'authorization')} ${req.path} ${req.body}`
        if (isPost(req, RUN_START) && key && res.status === 201 && !startsByBody.has(slot))
          startsByBody.set(slot, { key, res })
        return res
      },
    },
    {
      id: 'replay-reserialised',
      description: 'A replay re-renders the stored resource (another key order) instead of the stored bytes',
      targets: ['idempotency.replay-byte-identical'],
      response(req, res) {
        if (req.method !== 'POST' || res.headers['idempotent-replayed'] !== 'true') return res
        return editJson(res, (b) => Object.fromEntries(Object.entries(b).reverse()))
      },
    },
    {
      id: 'replay-unmarked',
      description: 'A replay omits the Idempotent-Replayed: true header',
      targets: ['idempotency.replay-byte-identical'],
      response(_req, res) {
        const { 'idempotent-replayed': _dropped, ...headers } = res.headers
        return { ...res, headers }
      },
    },
    {
      id: 'quota-refusal-kept',
      description:
        'A keyed POST refused 403 quota_exceeded is the key’s answer: repeated with the key, even once there is room, it replays the refusal',
      targets: ['idempotency.quota-refusals'],
      request(req) {
        const key = header(req, 'idempotency-key')
        const stored = key && quotaRefusalsByKey.get(`${header(req, 'authorization')} ${req.path} ${key}`)
        return req.method === 'POST' && stored ? replayed(stored) : req
      },
      response(req, res) {
        const key = header(req, 'idempotency-key')
        const error = parseJson(res.body)?.error
        const code = error !== null && typeof error === 'object' ? (error as Json).code : undefined
        if (req.method === 'POST' && key && res.status === 403 && code === 'quota_exceeded')
          quotaRefusalsByKey.set(`${header(req, 'authorization')} ${req.path} ${key}`, res)
        return res
      },
    },
    {
      id: 'idempotency-reuse-generic-code',
      description: 'Key reuse with another body answers 409 with the generic code conflict',
      targets: ['idempotency.conflict-codes'],
      response(_req, res) {
        if (res.status !== 409) return res
        return editJson(res, (b) => ({ ...b, error: { ...(b.error as Json), code: 'conflict' } }))
      },
    },
    {
      id: 'idempotency-long-key-truncated',
      description: 'Over-long Idempotency-Keys are silently truncated to 255 characters instead of refused',
      targets: ['idempotency.conflict-codes'],
      request(req) {
        const key = header(req, 'idempotency-key')
        if (req.method !== 'POST' || !key || key.length <= 255) return req
        return { ...req, headers: { ...req.headers, 'idempotency-key': key.slice(0, 255) } }
      },
    },
    {
      id: 'idempotency-key-any-form',
      description:
        'An Idempotency-Key of any form is taken: one with a space or a character past ASCII is used as its hash',
      targets: ['idempotency.key-form'],
      request(req) {
        const key = header(req, 'idempotency-key')
        if (req.method !== 'POST' || !key || /^[\x21-\x7e]+$/.test(key)) return req
        const hashed = createHash('sha256').update(key).digest('hex')
        return { ...req, headers: { ...req.headers, 'idempotency-key': hashed } }
      },
    },
    {
      id: 'idempotency-refusal-not-stored',
      description:
        'A keyed request refused 4xx leaves the key free: its repeat is refused afresh, not replayed',
      targets: ['idempotency.refusal-stored'],
      response(req, res) {
        if (!header(req, 'idempotency-key') || res.status < 400 || res.status >= 500) return res
        const { 'idempotent-replayed': _dropped, ...headers } = res.headers
        return { ...res, headers }
      },
    },
    {
      id: 'idempotency-race',
      description:
        'The key is checked before the first request commits: concurrent requests with one key each create',
      targets: ['idempotency.concurrent-use', 'idempotency.concurrent-answers'],
      request(req) {
        if (!alsoInFlight(req)) return req
        const key = header(req, 'idempotency-key')
        return {
          ...req,
          headers: { ...req.headers, 'idempotency-key': `${key}-${randomBytes(4).toString('hex')}` },
        }
      },
      response: landed,
    },

    {
      id: 'idempotency-in-flight-503',
      description:
        'A request whose key another request is still using is answered 503 (the work still done once), not a replay or a 409',
      targets: ['idempotency.concurrent-answers'],
      // A refused request is answered here: only the first, forwarded, reaches `response` and ends the flight.
      request(req) {
        return alsoInFlight(req) ? errorAnswer(503, 'unavailable', 'busy') : req
      },
      response: landed,
    },

    {
      id: 'idempotency-keeps-429',
      description:
        "A keyed POST refused 429 keeps the 429 as its key's answer: the retry the client is told to make replays it",
      targets: ['ratelimit.refused-write-has-no-effect'],
      request(req) {
        const key = header(req, 'idempotency-key')
        if (req.method !== 'POST' || !key) return req
        return kept429.get(`${header(req, 'authorization')} ${key}`) ?? req
      },
      response(req, res) {
        const key = header(req, 'idempotency-key')
        if (req.method === 'POST' && key && res.status === 429)
          kept429.set(`${header(req, 'authorization')} ${key}`, res)
        return res
      },
    },

    {
      id: 'idempotency-no-replay-beyond-agents',
      description:
        'A tool, task or subscription POST checks its key against the body (409 for another) but runs a repeat again instead of replaying its answer',
      targets: ['idempotency.replay-every-post'],
      request(req) {
        const key = header(req, 'idempotency-key')
        const path = pathOnly(req.path)
        if (req.method !== 'POST' || !key || !/^\/v1\/(tools|webhooks|agents\/[^/]+\/tasks)$/.test(path))
          return req
        const slot = `${header(req, 'authorization')} ${path} ${key}`
        const seen = bodiesByKey.get(slot)
        if (seen === undefined) {
          bodiesByKey.set(slot, req.body)
          return req
        }
        if (seen !== req.body) return errorAnswer(409, 'idempotency_conflict', 'key reused')
        return {
          ...req,
          headers: { ...req.headers, 'idempotency-key': `${key}-${randomBytes(4).toString('hex')}` },
        }
      },
    },

    // ---- ingestion ----
    {
      id: 'ingest-ignores-key',
      description:
        'Batches ignore the Idempotency-Key: a repeat is ingested again (and rejected as duplicates)',
      targets: ['ingest.idempotent-replay'],
      request(req) {
        if (!isPost(req, INGEST) || !header(req, 'idempotency-key')) return req
        const { 'idempotency-key': _dropped, ...headers } = req.headers
        return { ...req, headers }
      },
    },
    {
      id: 'ingest-cache-keyed-by-path',
      description:
        'The ingest answer is cached per connector, whatever the key: a new batch under a fresh key replays the first answer',
      targets: ['ingest.idempotent-replay'],
      request(req) {
        if (!isPost(req, INGEST) || !header(req, 'idempotency-key')) return req
        const cached = ingestByPath.get(`${header(req, 'authorization')} ${req.path}`)
        return cached ? replayed(cached) : req
      },
      response(req, res) {
        if (isPost(req, INGEST) && header(req, 'idempotency-key') && res.status === 202)
          ingestByPath.set(`${header(req, 'authorization')} ${req.path}`, res)
        return res
      },
    },
    {
      id: 'lineage-root-unprefixed',
      description: 'lineage_root is a Merkle root computed without the RFC 6962 leaf/node prefixes',
      targets: ['ingest.lineage-root-merkle'],
      response(req, res) {
        if (!isPost(req, INGEST) || res.status !== 202) return res
        const sent = parseJson(req.body)?.records
        if (!Array.isArray(sent)) return res
        return editJson(res, (b) => {
          const rejected = new Set(
            (Array.isArray(b.rejections) ? b.rejections : []).map((r) => (r as Json).index),
          )
          const leaves = sent.filter((_, i) => !rejected.has(i)).map((r) => Buffer.from(canonicalize(r)))
          return { ...b, lineage_root: unprefixedMerkleRoot(leaves) }
        })
      },
    },
    {
      id: 'records-newest-first',
      description: 'Connector records read back newest first',
      targets: ['ingest.records-read-back'],
      response(req, res) {
        if (!isGet(req, RECORDS)) return res
        return editPageItems(res, (records) => [...records].reverse())
      },
    },
    {
      id: 'rejection-index-one-based',
      description: 'Rejections count record positions from 1',
      targets: ['ingest.rejections-explained'],
      response(req, res) {
        if (!isPost(req, INGEST)) return res
        return editJson(res, (b) =>
          Array.isArray(b.rejections)
            ? {
                ...b,
                rejections: b.rejections.map((r) => {
                  const rej = r as Json
                  return typeof rej.index === 'number' ? { ...rej, index: rej.index + 1 } : rej
                }),
              }
            : undefined,
        )
      },
    },

    // ---- workspace scoping ----
    {
      id: 'connector-records-cross-workspace',
      description: 'Connector records are looked up by connector id alone: another workspace reads them',
      targets: ['scoping.connector-records-404'],
      response: foreignRead(RECORDS, (owner) => owner),
    },
    {
      id: 'unknown-connector-empty-page',
      description: 'Records of a connector the workspace does not hold answer 200 with an empty page',
      targets: ['scoping.connector-records-404'],
      response(req, res) {
        if (!isGet(req, RECORDS) || res.status !== 404) return res
        return {
          status: 200,
          headers: { ...res.headers, 'content-type': 'application/json' },
          body: JSON.stringify({ data: [], next_cursor: null }),
        }
      },
    },
    {
      id: 'webhook-foreign-403',
      description: 'Another workspace’s webhook answers 403 forbidden, telling the caller it exists',
      targets: ['scoping.webhook-404'],
      response: foreignRead(/^\/v1\/webhooks\/[^/]+$/, () =>
        errorAnswer(403, 'forbidden', 'This webhook belongs to another workspace'),
      ),
    },
    {
      id: 'foreign-404-says-why',
      description:
        'A foreign agent answers 404 not_found but its message says it belongs to another workspace',
      targets: ['scoping.foreign-404-tells-nothing-more', 'scoping.identical-404-bodies'],
      run: ['scoping.foreign-404-tells-nothing-more', 'scoping.identical-404-bodies'],
      response: foreignRead(/^\/v1\/agents\/[^/]+$/, (_owner, res) =>
        editJson(res, (b) => ({
          ...b,
          error: { ...(b.error as Json), message: 'This agent belongs to another workspace' },
        })),
      ),
    },
    {
      id: 'task-assign-any-workspace',
      description: 'Assigning a task checks the agent exists but not its workspace',
      targets: ['scoping.cross-workspace-writes-404'],
      async response(req, res, ctx) {
        if (!isPost(req, /^\/v1\/agents\/[^/]+\/tasks$/) || res.status !== 404 || !fromSecond(req, ctx))
          return res
        return ctx.upstream(asPrimary(req, ctx))
      },
    },
    {
      id: 'foreign-agent-writes-403',
      description: 'Writes to another workspace’s agent are refused 403 (ownership checked before existence)',
      targets: ['scoping.cross-workspace-writes-404'],
      async response(req, res, ctx) {
        const m = /^\/v1\/agents\/([^/]+)(\/tasks|\/runs)?$/.exec(pathOnly(req.path))
        if (req.method === 'GET' || !m || res.status !== 404 || !fromSecond(req, ctx)) return res
        const owner = await ctx.upstream({
          ...asPrimary(req, ctx),
          method: 'GET',
          path: `/v1/agents/${m[1]}`,
          body: '',
        })
        return owner.status === 200
          ? errorAnswer(403, 'forbidden', 'The agent belongs to another workspace')
          : res
      },
    },
    {
      id: 'agent-list-all-workspaces',
      description: 'The agent list is not filtered by workspace: other workspaces’ agents are appended',
      targets: ['scoping.lists-stay-in-workspace'],
      async response(req, res, ctx) {
        if (!isGet(req, /^\/v1\/agents$/) || res.status !== 200 || !fromSecond(req, ctx)) return res
        if (query(req.path).has('cursor')) return res
        const owned = await everyItem(asPrimary(req, ctx), ctx)
        return editPageItems(res, (items) => [...items, ...owned])
      },
    },
    {
      id: 'tool-list-all-workspaces',
      description: 'The tool list is not filtered by workspace: other workspaces’ tools are appended',
      targets: ['scoping.lists-stay-in-workspace'],
      async response(req, res, ctx) {
        if (!isGet(req, /^\/v1\/tools$/) || res.status !== 200 || !fromSecond(req, ctx)) return res
        if (query(req.path).has('cursor')) return res
        const owned = await everyItem(asPrimary(req, ctx), ctx)
        return editPageItems(res, (items) => [...items, ...owned])
      },
    },
  ]
}

/**
 * The upgrade answers a token from a cache that outlives its key's revoke: the revocable token opens a stream again
 * after the deployment closed its connections for the revoke (the second upgrade with it goes through as the
 * primary identity's).
 */
/** The stream's word that a connection's key expired: an error whose detail.reason is `expired`. */
function expiryNotice(message: Json): boolean {
  const error = message.error
  if (message.type !== 'error' || !error || typeof error !== 'object' || Array.isArray(error)) return false
  const detail = (error as Json).detail
  return !!detail && typeof detail === 'object' && (detail as Json).reason === 'expired'
}

function revokedTokenUpgradeAccepted(): Mutant {
  let upgrades = 0
  let seen: string | undefined
  return {
    id: 'revoked-token-upgrade-accepted',
    description:
      "A revoked key's connections are closed, but its token still opens the stream from a cache for a while",
    targets: ['stream.revoked-key-ends-connections'],
    upgrade(headers, ctx) {
      const revocable = bearer(ctx.tokens.revocable)
      if (!revocable || headers.authorization !== revocable) return headers
      if (seen !== revocable) {
        seen = revocable
        upgrades = 0
      }
      upgrades++
      return upgrades > 2 ? { ...headers, authorization: `Bearer ${ctx.tokens.primary}` } : headers
    },
  }
}

/**
 * A deployment that remembers the first secret a freshly read key was shown, right or wrong, for its cache's life: a
 * token refused for one wrong character takes the key's own token down with it for a few seconds.
 */
function wrongSecretLocksTheKey(): Mutant {
  const lockedUntil = new Map<string, number>()
  return {
    id: 'wrong-secret-locks-the-key',
    description:
      "After a key's token with a wrong secret is refused, the key's own token is refused for a while too",
    targets: ['auth.refused-secret-leaves-the-key'],
    request(req, ctx) {
      const sent = /^Bearer (.+)$/.exec(header(req, 'authorization') ?? '')?.[1]
      if (!sent) return req
      const known = Object.values(ctx.tokens).filter((t): t is string => typeof t === 'string')
      if ((lockedUntil.get(sent) ?? 0) > Date.now())
        return errorAnswer(401, 'unauthenticated', 'The bearer token is not valid', { reason: 'unknown' })
      const same = known.find(
        (t) => t !== sent && t.length === sent.length && t.slice(0, -1) === sent.slice(0, -1),
      )
      if (same) lockedUntil.set(same, Date.now() + 3000)
      return req
    },
  }
}
