/**
 * Coverage of the contract, not only of statements: a statement counts as traced when a check names it, but that
 * says nothing about whether a request ever reached the path where an implementation would get it wrong. This
 * records, from the run's own traffic (every exchange of the HTTP client, every webhook delivery, every stream
 * message), which operation answered which documented status, which event kinds were delivered, which trace
 * levels and frame kinds, stream messages, error paths and lifecycle interactions the run exercised.
 */
import type WebSocket from 'ws'
import type { Contract } from './contract.js'
import type { Exchange } from './types.js'

type Json = Record<string, unknown>

/** Requests off the documented path, each an error path an implementation must answer with care. */
export const ERROR_PATHS = {
  'unknown-route': 'a path under /v1 that no operation serves',
  'wrong-method': 'a documented path with a method it does not serve',
  'wrong-content-type': 'a body sent with a media type other than JSON',
  'too-large': 'a body over the deployment’s size limit (answered 413)',
  'wrong-version': 'a path under another major version (/v2/…) or none',
  'malformed-auth': 'an Authorization header that is not `Bearer <token>`',
  'missing-auth': 'no Authorization header',
  'malformed-json': 'a JSON body that does not parse',
} as const
export type ErrorPath = keyof typeof ERROR_PATHS

/** Follow-up requests to a resource after it was deleted, retired, cancelled, or with a revoked/expired key. */
export const LIFECYCLE = {
  'after-delete': 'a request to an agent or webhook after its DELETE',
  'after-retire': 'a request naming a tool after it was retired',
  'after-cancel': 'a control or read of a run after it was cancelled',
  'after-revoke': 'a request with a revoked or expired key',
} as const
export type Lifecycle = keyof typeof LIFECYCLE

export interface OperationCoverage {
  operation: string
  method: string
  path: string
  extension: boolean
  documented: string[]
  produced: string[]
  /** Documented statuses the run did not produce, except those no client can provoke (see `unprovokable`). */
  missing: string[]
  /** Documented statuses no black-box run can honestly provoke from a healthy deployment (500, 503). */
  unprovokable: string[]
  /** Statuses the run saw that the contract does not list for the operation. */
  undocumented: string[]
}

export interface Tally {
  /** Every value the contract lists, in its order. */
  documented: string[]
  produced: string[]
  missing: string[]
  /** Why a value the suite knowingly leaves out stays missing, by value (only those missing from the run). */
  why?: Record<string, string>
}

export interface ContractCoverage {
  operations: OperationCoverage[]
  /** `reachable`: documented minus the unprovokable (500/503), the figure the suite aims to produce in full. */
  responses: { documented: number; reachable: number; produced: number }
  events: Tally
  traceLevels: Tally
  traceFrameKinds: Tally
  streamClientMessages: Tally
  streamServerMessages: Tally
  errorPaths: Record<ErrorPath, { exercised: boolean; statuses: number[] }>
  lifecycle: Record<Lifecycle, { exercised: boolean; seen: string[] }>
  /** Why the unprovokable statuses stay unexercised, by status. */
  notes: Record<string, string>
  /** Why documented statuses the suite could provoke are still missing from a full run, by status (honest gaps). */
  gaps: Record<string, string>
}

/**
 * Documented answers no black-box run can honestly provoke from a healthy deployment; the report names them with
 * the reason instead of counting them as gaps of the suite.
 */
const UNPROVOKABLE: Record<string, string> = {
  '500':
    'an internal error: a healthy deployment gives the suite no way to cause one (sweep.no-5xx checks none came)',
  '503': 'temporarily unavailable (a store or dependency outage): not something a client can cause',
}

/**
 * Why reachable statuses are still left out of a full run against the reference (see the per-operation table).
 * They are gaps of the suite, not answers no client can provoke, so they count against the coverage figure.
 */
const GAPS: Record<string, string> = {
  '403':
    'produced with the narrow-scope token (agents:read only) on every operation that needs another scope, and on GET /v1/agents and GET /v1/agents/{agent_id}, which it may call, with the other-scope token (--other-scope-token: scopes without agents:read; --reference issues one)',
  '400':
    'produced for bodies, limit=0, over-long path ids (the SSE trace route too: it applies the contract’s maxLength and answers 400 invalid_request) and a malformed Last-Event-ID',
  '409':
    'produced by key reuse with another body on every POST the spec lists, state conflicts (runs, approvals, agents, GraphQL) and a redelivery during an attempt',
  '429':
    'produced on every operation while the small-limit workspace is over its limit (ratelimit.429-every-operation)',
}

function collectEnum(contract: Contract, name: string): string[] {
  const schema = contract.deref(contract.at(`/components/schemas/${name}`)) as Json | undefined
  if (!schema) return []
  const type = (schema.properties as Json | undefined)?.type as Json | undefined
  const values = (type?.enum ?? schema.enum) as unknown
  return Array.isArray(values) ? values.map(String) : []
}

/** Values of the contract's lists no check produces on purpose, and why (the report names them). */
const LEFT_OUT: Record<string, string> = {
  gap: 'produced only with a declared replay window (stream.replayWindow in the config; --reference runs the reference with a window of 20 and declares it): a resume from before more than the window; at the reference default of 1000 messages it cost about a second of CPU',
}

function tally(documented: string[], produced: Set<string>): Tally {
  const extra = [...produced].filter((p) => !documented.includes(p)).sort()
  const missing = documented.filter((d) => !produced.has(d))
  const why = Object.fromEntries(missing.flatMap((m) => (LEFT_OUT[m] ? [[m, LEFT_OUT[m]]] : [])))
  return {
    documented,
    produced: [...documented.filter((d) => produced.has(d)), ...extra],
    missing,
    ...(Object.keys(why).length > 0 ? { why } : {}),
  }
}

const BEARER = /^Bearer \S/

export class CoverageRecorder {
  private readonly statuses = new Map<string, Set<string>>()
  private readonly unmatched = new Map<ErrorPath, Set<number>>()
  private readonly events = new Set<string>()
  private readonly traceLevels = new Set<string>()
  private readonly frameKinds = new Set<string>()
  private readonly clientMessages = new Set<string>()
  private readonly serverMessages = new Set<string>()
  private readonly lifecycle = new Map<Lifecycle, Set<string>>()
  /** Resource ids the run ended the life of, and how. */
  private readonly ended = new Map<string, Lifecycle>()

  constructor(
    private readonly contract: Contract,
    /** Fingerprints of tokens that are revoked or expired (the expired token): requests with them are `after-revoke`. */
    private readonly revokedFingerprints: ReadonlySet<string> = new Set(),
  ) {}

  /** An ExchangeObserver: classifies one HTTP exchange. */
  readonly observe = (exchange: Exchange, response: { status: number; body: unknown } | undefined): void => {
    if (!response) return
    const url = new URL(exchange.url)
    const path = url.pathname
    const status = response.status
    const headers = exchange.requestHeaders
    const auth = headers.authorization
    const paths: ErrorPath[] = []
    if (auth === undefined) paths.push('missing-auth')
    else if (!BEARER.test(auth)) paths.push('malformed-auth')
    if (exchange.requestBody !== undefined) {
      const media = (headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
      if (media !== 'application/json' && !media.endsWith('+json')) paths.push('wrong-content-type')
      else if (!parses(exchange.requestBody)) paths.push('malformed-json')
    }
    if (status === 413) paths.push('too-large')
    const op = this.contract.find(exchange.method, path)
    if (op) {
      const key = `${op.method.toUpperCase()} ${op.template}`
      const set = this.statuses.get(key) ?? new Set<string>()
      set.add(String(status))
      this.statuses.set(key, set)
      this.noteContent(op.template, exchange, status, response.body)
    } else if (/^\/v\d+\//.test(path) && !path.startsWith('/v1/')) paths.push('wrong-version')
    else if (!path.startsWith('/v1/') && this.contract.operations.some((o) => o.pattern.test(`/v1${path}`)))
      paths.push('wrong-version')
    else if (this.contract.operations.some((o) => o.pattern.test(path))) paths.push('wrong-method')
    else if (path.startsWith('/v1/')) paths.push('unknown-route')
    for (const p of paths) {
      const set = this.unmatched.get(p) ?? new Set<number>()
      set.add(status)
      this.unmatched.set(p, set)
    }
    this.noteLifecycle(exchange, op?.template, status)
  }

  /** A webhook delivery's event kind (`event`, or `type` as some deployments name it). */
  event(body: Json | undefined): void {
    const kind = body?.event ?? body?.type
    if (typeof kind === 'string') this.events.add(kind)
  }

  /** A message the suite sent (`sent`) or received on the stream; its `type` is what counts. */
  streamMessage(direction: 'sent' | 'received', message: unknown): void {
    let value = message
    if (typeof value === 'string' || Buffer.isBuffer(value)) {
      try {
        value = JSON.parse(String(value)) as unknown
      } catch {
        return
      }
    }
    const type = (value as Json | null)?.type
    if (typeof type !== 'string') return
    ;(direction === 'sent' ? this.clientMessages : this.serverMessages).add(type)
  }

  /** Records every message the suite sends and receives on a socket (the stream, the GraphQL subscription). */
  watchSocket(ws: WebSocket): void {
    ws.on('message', (data) => this.streamMessage('received', String(data)))
    const send = ws.send.bind(ws)
    ws.send = ((data: Parameters<WebSocket['send']>[0], ...rest: unknown[]) => {
      this.streamMessage('sent', String(data))
      return (send as (...args: unknown[]) => void)(data, ...rest)
    }) as WebSocket['send']
  }

  private noteContent(template: string, exchange: Exchange, status: number, body: unknown): void {
    // A level counts once a run was started with it (a refused start exercised nothing of it).
    if (
      exchange.method === 'POST' &&
      template === '/v1/agents/{agent_id}/runs' &&
      exchange.requestBody &&
      status < 300
    ) {
      const level = (safeParse(exchange.requestBody) as Json | undefined)?.trace_level
      this.traceLevels.add(typeof level === 'string' ? level : '(default)')
    }
    if (exchange.method === 'GET' && template === '/v1/runs/{run_id}/trace') {
      const data = (body as Json | null)?.data
      if (Array.isArray(data))
        for (const f of data) {
          const kind = (f as Json | null)?.kind
          if (typeof kind === 'string') this.frameKinds.add(kind)
        }
    }
  }

  private noteLifecycle(exchange: Exchange, template: string | undefined, status: number): void {
    const path = new URL(exchange.url).pathname
    const record = (kind: Lifecycle, what: string) => {
      const set = this.lifecycle.get(kind) ?? new Set<string>()
      set.add(what)
      this.lifecycle.set(kind, set)
    }
    const shape = `${exchange.method} ${template ?? path} → ${status}`
    if (exchange.tokenFingerprint && this.revokedFingerprints.has(exchange.tokenFingerprint))
      record('after-revoke', shape)
    // A request naming an id whose life ended earlier in the run (the id in the path or in the body).
    const named = [...path.split('/'), ...idsIn(exchange.requestBody)]
    for (const part of named) {
      const kind = this.ended.get(part)
      if (kind) record(kind, shape)
    }
    if (status >= 300) return
    const ended = (kind: Lifecycle, pattern: RegExp) => {
      const m = pattern.exec(path)
      if (m?.[1]) this.ended.set(m[1], kind)
    }
    if (exchange.method === 'DELETE') {
      ended('after-delete', /^\/v1\/agents\/([^/]+)$/)
      ended('after-delete', /^\/v1\/webhooks\/([^/]+)$/)
      ended('after-retire', /^\/v1\/tools\/([^/]+)$/)
    }
    if (exchange.method === 'POST') ended('after-cancel', /^\/v1\/runs\/([^/]+)\/cancel$/)
  }

  report(): ContractCoverage {
    const operations: OperationCoverage[] = this.contract.operations.map((op) => {
      const key = `${op.method.toUpperCase()} ${op.template}`
      const documented = Object.keys(op.responses)
      const produced = [...(this.statuses.get(key) ?? [])].sort()
      const unproduced = documented.filter((s) => !produced.includes(s))
      return {
        operation: op.id,
        method: op.method.toUpperCase(),
        path: op.template,
        extension:
          this.contract.at(
            `/paths/${op.template.replace(/~/g, '~0').replace(/\//g, '~1')}/${op.method}/x-extension`,
          ) !== undefined,
        documented,
        produced: produced.filter((s) => documented.includes(s)),
        missing: unproduced.filter((s) => UNPROVOKABLE[s] === undefined),
        unprovokable: unproduced.filter((s) => UNPROVOKABLE[s] !== undefined),
        undocumented: produced.filter((s) => !documented.includes(s)),
      }
    })
    const errorPaths = Object.fromEntries(
      (Object.keys(ERROR_PATHS) as ErrorPath[]).map((p) => {
        const statuses = [...(this.unmatched.get(p) ?? [])].sort((a, b) => a - b)
        return [p, { exercised: statuses.length > 0, statuses }]
      }),
    ) as ContractCoverage['errorPaths']
    const lifecycle = Object.fromEntries(
      (Object.keys(LIFECYCLE) as Lifecycle[]).map((k) => {
        const seen = [...(this.lifecycle.get(k) ?? [])].sort()
        return [k, { exercised: seen.length > 0, seen }]
      }),
    ) as ContractCoverage['lifecycle']
    return {
      operations,
      responses: {
        documented: operations.reduce((n, o) => n + o.documented.length, 0),
        reachable: operations.reduce((n, o) => n + o.produced.length + o.missing.length, 0),
        produced: operations.reduce((n, o) => n + o.produced.length, 0),
      },
      events: tally(collectEnum(this.contract, 'EventKind'), this.events),
      traceLevels: tally(collectEnum(this.contract, 'TraceLevel'), this.traceLevels),
      traceFrameKinds: tally(collectEnum(this.contract, 'TraceFrameKind'), this.frameKinds),
      streamClientMessages: tally(collectEnum(this.contract, 'StreamClientMessage'), this.clientMessages),
      streamServerMessages: tally(collectEnum(this.contract, 'StreamServerMessage'), this.serverMessages),
      errorPaths,
      lifecycle,
      notes: { ...UNPROVOKABLE },
      gaps: Object.fromEntries(
        Object.entries(GAPS).filter(([status]) => operations.some((o) => o.missing.includes(status))),
      ),
    }
  }
}

function parses(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

/** String values of a JSON request body (ids named in it, e.g. a run started with a retired tool's id). */
function idsIn(body: string | undefined): string[] {
  if (!body || body.length > 100_000) return []
  const out: string[] = []
  const walk = (v: unknown, depth: number) => {
    if (depth > 6) return
    if (typeof v === 'string') out.push(v)
    else if (Array.isArray(v)) for (const x of v) walk(x, depth + 1)
    else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x, depth + 1)
  }
  walk(safeParse(body), 0)
  return out
}

/** One line for the console summary. */
export function coverageLine(c: ContractCoverage): string {
  const errorPaths = Object.values(c.errorPaths).filter((p) => p.exercised).length
  const lifecycle = Object.values(c.lifecycle).filter((p) => p.exercised).length
  const part = (name: string, t: Tally) =>
    `${name} ${t.documented.length - t.missing.length}/${t.documented.length}`
  return `contract coverage: responses ${c.responses.produced}/${c.responses.reachable} (operation × documented status; ${c.responses.documented - c.responses.reachable} more are 500/503), ${part('event kinds', c.events)}, ${part('trace levels', c.traceLevels)}, ${part('frame kinds', c.traceFrameKinds)}, ${part('stream messages', { documented: [...c.streamClientMessages.documented, ...c.streamServerMessages.documented], produced: [], missing: [...c.streamClientMessages.missing, ...c.streamServerMessages.missing] })}, error paths ${errorPaths}/${Object.keys(c.errorPaths).length}, lifecycle ${lifecycle}/${Object.keys(c.lifecycle).length}`
}
