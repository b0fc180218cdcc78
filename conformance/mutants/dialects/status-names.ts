/**
 * A deployment that names its run statuses its own way. Spec §3 names two, `queued` and `awaiting_approval`; "Complete
 * list of run status values: not shown", "The status value that follows cancel is not named", and the event kinds
 * `run.succeeded` and `run.failed` "are not tied to status values". So `in_progress`, `suspended`, `completed`,
 * `errored` and `canceled` are as correct as the reference's `running`, `paused`, `succeeded`, `failed` and
 * `cancelled`. The names change everywhere a status travels: answers, query filters, trace pages and streams, stream
 * messages and deliveries (signed again over the rewritten body). Event kinds keep their names.
 */
import type { SuiteConfig } from '../../src/config.js'
import type { Dialect } from '../dialects.js'
import { type Json, type ProxiedResponse, pathOnly, query, withQuery } from '../proxy.js'
import { isJsonAnswer, resign, Secrets } from './wire.js'

/** The reference's names → this deployment's (the two the spec names stay). */
export const OWN_STATUS_NAMES: Record<string, string> = {
  running: 'in_progress',
  paused: 'suspended',
  succeeded: 'completed',
  failed: 'errored',
  cancelled: 'canceled',
}
const BACK = Object.fromEntries(Object.entries(OWN_STATUS_NAMES).map(([k, v]) => [v, k]))

/** Members that hold a status: a run's or task's own, a transition's ends, where a paused run resumes to. */
const STATUS_MEMBERS = new Set(['status', 'from', 'to', 'paused_from', 'run_status'])

/** Deep copy with every status member's value renamed through `names`. */
function renamed(value: unknown, names: Record<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => renamed(v, names))
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value as Json).map(([k, v]) => [
      k,
      STATUS_MEMBERS.has(k) && typeof v === 'string' ? (names[v] ?? v) : renamed(v, names),
    ]),
  )
}

/** A server-sent event's `data:` lines, each JSON one renamed. */
function renamedEvent(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      if (!line.startsWith('data:')) return line
      try {
        return `data: ${JSON.stringify(renamed(JSON.parse(line.slice(5)), OWN_STATUS_NAMES))}`
      } catch {
        return line
      }
    })
    .join('\n')
}

/** The declaration this deployment's users put in --config. */
export function declareOwnStatusNames(config: SuiteConfig): void {
  config.runStatuses = {
    running: [OWN_STATUS_NAMES.running!],
    paused: [OWN_STATUS_NAMES.paused!],
    succeeded: [OWN_STATUS_NAMES.succeeded!],
    failed: [OWN_STATUS_NAMES.failed!],
    cancelled: [OWN_STATUS_NAMES.cancelled!],
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
      const q = query(req.path)
      let changed = false
      for (const [k, v] of [...q.entries()])
        if (BACK[v] !== undefined) {
          q.set(k, BACK[v])
          changed = true
        }
      return changed ? { ...req, path: withQuery(pathOnly(req.path), q) } : req
    },
    response(_req, res): ProxiedResponse {
      if ((res.headers['content-type'] ?? '').includes('text/event-stream'))
        return { ...res, body: renamedEvent(res.body) }
      if (!isJsonAnswer(res.headers) || res.body === '') return res
      try {
        return { ...res, body: JSON.stringify(renamed(JSON.parse(res.body), OWN_STATUS_NAMES)) }
      } catch {
        return res
      }
    },
    delivery(req) {
      let body: Json
      try {
        body = JSON.parse(req.body) as Json
      } catch {
        return req
      }
      return resign(req, renamed(body, OWN_STATUS_NAMES) as Json, secrets.forDelivery(req))
    },
    streamMessage: (message) => renamed(message, OWN_STATUS_NAMES) as Json,
  }
}
