/**
 * A deployment that names its run statuses its own way. Spec §3 names two, `queued` and `awaiting_approval`; "Complete
 * list of run status values: not shown", "The status value that follows cancel is not named", and the event kinds
 * `run.succeeded` and `run.failed` "are not tied to status values". So `in_progress`, `suspended`, `completed`,
 * `errored` and `canceled` are as correct as the reference's `running`, `paused`, `succeeded`, `failed` and
 * `cancelled`. The names change everywhere a status travels: answers, query filters, trace pages and streams, stream
 * messages and deliveries (signed again over the rewritten body). Event kinds keep their names.
 */
import type { SuiteConfig } from '../../src/config.js'
import type { RunStatusRole } from '../../src/run-statuses.js'
import type { Dialect } from '../dialects.js'
import {
  type Json,
  type ProxiedRequest,
  type ProxiedResponse,
  parseJson,
  pathOnly,
  query,
  withQuery,
} from '../proxy.js'
import { resign, Secrets } from './wire.js'

/** The reference's names → this deployment's (the two the spec names stay). */
export const OWN_STATUS_NAMES: Readonly<Record<RunStatusRole, string>> = {
  running: 'in_progress',
  paused: 'suspended',
  succeeded: 'completed',
  failed: 'errored',
  cancelled: 'canceled',
}
const OUT = new Map<string, string>(Object.entries(OWN_STATUS_NAMES))
const BACK = new Map<string, string>(Object.entries(OWN_STATUS_NAMES).map(([k, v]) => [v, k]))

/** Members that hold a status: a run's or task's own, a transition's ends, where a paused run resumes to. */
const STATUS_MEMBERS = new Set(['status', 'from', 'to', 'paused_from', 'run_status'])

/** Deep copy with every status member's value under this deployment's name. */
function renamed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(renamed)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value as Json).map(([k, v]) => [
      k,
      STATUS_MEMBERS.has(k) && typeof v === 'string' ? (OUT.get(v) ?? v) : renamed(v),
    ]),
  )
}

/** A JSON value (an answer's body, a stream message, a delivery) with the statuses in it under their own names. */
export function ownStatusNames<T>(value: T): T {
  return renamed(value) as T
}

/** An answer's text with the statuses in it renamed: JSON or server-sent events (other text as it is). */
export function ownStatusNamesIn(text: string, contentType: string): string {
  if (contentType.includes('text/event-stream')) return renamedEvent(text)
  if (!contentType.includes('json') || text === '') return text
  try {
    return JSON.stringify(renamed(JSON.parse(text)))
  } catch {
    return text
  }
}

/** A request whose query filters by a status of this deployment's, sent on with the reference's name. */
export function referenceStatusQuery(req: ProxiedRequest): ProxiedRequest {
  const q = query(req.path)
  let changed = false
  for (const [k, v] of [...q.entries()]) {
    const reference = BACK.get(v)
    if (reference === undefined) continue
    q.set(k, reference)
    changed = true
  }
  return changed ? { ...req, path: withQuery(pathOnly(req.path), q) } : req
}

/** A server-sent event's `data:` lines, each JSON one renamed. */
function renamedEvent(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      if (!line.startsWith('data:')) return line
      try {
        return `data: ${JSON.stringify(renamed(JSON.parse(line.slice(5))))}`
      } catch {
        return line
      }
    })
    .join('\n')
}

/** The declaration this deployment's users put in --config. */
export function declareOwnStatusNames(config: SuiteConfig): void {
  const own = OWN_STATUS_NAMES
  config.runStatuses = {
    running: [own.running],
    paused: [own.paused],
    succeeded: [own.succeeded],
    failed: [own.failed],
    cancelled: [own.cancelled],
  }
}

export function statusNamesDialect(): Dialect {
  const secrets = new Secrets()
  return {
    id: 'own-status-names',
    description: 'Run statuses in_progress, suspended, completed, errored and canceled, declared',
    targets: [],
    configure: declareOwnStatusNames,
    request(req) {
      secrets.learn(req)
      return referenceStatusQuery(req)
    },
    response: (_req, res): ProxiedResponse => ({
      ...res,
      body: ownStatusNamesIn(res.body, res.headers['content-type'] ?? ''),
    }),
    delivery(req) {
      const body = parseJson(req.body)
      return body ? resign(req, ownStatusNames(body), secrets.forDelivery(req)) : req
    },
    streamMessage: (message) => ownStatusNames(message),
  }
}
