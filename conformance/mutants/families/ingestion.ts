/**
 * Ingestion bugs the per-record, duplicate, limit, lineage, connector id and event checks must catch: mistyped
 * records taken as they come, reasons without words, duplicates under another code, a record limit answered with
 * the schema's 400, stored records without their audit paths, any connector topic taken, an event that loses its
 * rejected count.
 */
import {
  editJson,
  editPageItems,
  errorAnswer,
  type Json,
  type Mutant,
  type ProxiedRequest,
  parseJson,
  pathOnly,
} from '../proxy.js'

const INGEST = /^\/v1\/grid\/connectors\/[^/]+\/ingest$/
const RECORDS = /^\/v1\/grid\/connectors\/[^/]+\/records$/

const is = (req: ProxiedRequest, method: string, re: RegExp) =>
  req.method === method && re.test(pathOnly(req.path))

/** The batch answer's rejections, each passed through `edit`. */
const editRejections = (edit: (r: Json) => Json) => (b: Json) =>
  Array.isArray(b.rejections) ? { ...b, rejections: (b.rejections as Json[]).map(edit) } : undefined

/** A record with every §2 field coerced to the type §2 gives it, the way a lenient deployment reads one. */
function coerced(record: unknown): unknown {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return record
  const r = record as Json
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v ?? 'unknown'))
  return {
    ...r,
    id: text(r.id),
    source: text(r.source),
    policy_class: typeof r.policy_class === 'string' ? r.policy_class : 'public',
    ts: typeof r.ts === 'string' ? r.ts : new Date().toISOString(),
    body:
      r.body !== null && typeof r.body === 'object' && !Array.isArray(r.body)
        ? r.body
        : { value: r.body ?? null },
  }
}

export function ingestionMutants(): Mutant[] {
  return [
    {
      id: 'ingest-coerces-mistyped-fields',
      description:
        'A batch takes records whose fields are missing or of another type, filling and coercing them (a number id becomes a string, a text body an object)',
      targets: ['ingest.typed-fields-enforced'],
      request(req) {
        if (!is(req, 'POST', INGEST)) return req
        const body = parseJson(req.body)
        if (!body || !Array.isArray(body.records)) return req
        return { ...req, body: JSON.stringify({ ...body, records: body.records.map(coerced) }) }
      },
    },
    {
      id: 'rejection-messages-blank',
      description: 'Rejected records carry their code but an empty message',
      targets: ['ingest.rejection-codes'],
      response(req, res) {
        if (!is(req, 'POST', INGEST)) return res
        return editJson(
          res,
          editRejections((r) => ({ ...r, message: '' })),
        )
      },
    },
    {
      id: 'duplicates-as-invalid-field',
      description: 'A record id the connector already holds is rejected as invalid_field, not duplicate_id',
      targets: ['ingest.duplicate-ids'],
      response(req, res) {
        if (!is(req, 'POST', INGEST)) return res
        return editJson(
          res,
          editRejections((r) => (r.code === 'duplicate_id' ? { ...r, code: 'invalid_field' } : r)),
        )
      },
    },
    {
      id: 'batch-limit-as-schema-400',
      description:
        'A batch over 500 records is refused with the schema’s 400 invalid_request, not 413 naming the limit',
      targets: ['ingest.batch-limit'],
      request(req) {
        if (!is(req, 'POST', INGEST)) return req
        const records = parseJson(req.body)?.records
        if (!Array.isArray(records) || records.length <= 500) return req
        return errorAnswer(400, 'invalid_request', 'records: too many items')
      },
    },
    {
      id: 'records-without-proofs',
      description: 'Stored records read back with an empty audit path',
      targets: ['ingest.stored-lineage-verifies'],
      response(req, res) {
        if (!is(req, 'GET', RECORDS)) return res
        return editPageItems(res, (records) =>
          records.map((r) => ({ ...r, lineage: { ...(r.lineage as Json), proof: [] } })),
        )
      },
    },
    {
      id: 'stream-takes-any-topic',
      description:
        'The stream answers every subscribe with subscribed, a connector id outside the pattern too',
      targets: ['ingest.connector-id-pattern'],
      streamMessage(message) {
        return message.type === 'error' && typeof message.topic === 'string'
          ? { type: 'subscribed', topic: message.topic }
          : message
      },
    },
    {
      id: 'stream-bad-message-vague',
      description:
        'The stream refuses every malformed message with one vague sentence that names no member, and forgets its ref',
      targets: ['stream.bad-messages-refused'],
      streamMessage(message) {
        const error = message.error as Json | undefined
        if (message.type !== 'error' || error?.code !== 'invalid_request' || 'topic' in message)
          return message
        const { ref: _ref, ...rest } = message
        return { ...rest, error: { ...error, message: 'Bad message' } }
      },
    },
    {
      id: 'stream-ingest-answer-without-connector',
      description: 'A batch sent over the stream is answered without the connector id it was stored under',
      targets: ['stream.socket-ingest-judged-like-rest'],
      streamMessage(message) {
        if (message.type !== 'ingested') return message
        const { connector_id: _c, ...rest } = message
        return rest
      },
    },
    {
      id: 'stream-ingest-not-rate-limited',
      description:
        "A batch sent over the stream never counts against the workspace's rate limit: past it, each is still taken",
      targets: ['stream.socket-ingest-rate-limited'],
      streamMessage(message) {
        // The deployment answers the batch the rate limit refused, as one that never counted it would.
        if (message.type !== 'error' || (message.error as Json | undefined)?.code !== 'rate_limited')
          return message
        return { type: 'ingested', ref: message.ref, accepted: 1, rejected: 0, rejections: [] }
      },
    },
    {
      id: 'stream-ingest-pending-unbounded',
      description:
        'A connection queues any number of batches: the one past the 16 that may wait for their answer is taken too',
      targets: ['stream.socket-ingest-judged-like-rest'],
      streamMessage(message) {
        // The refusal of a batch past the pending bound (rate_limited, detail.limit 16), answered as taken.
        const error = message.error as Json | undefined
        const detail = error?.detail as Json | undefined
        if (message.type !== 'error' || error?.code !== 'rate_limited' || detail?.limit !== 16) return message
        return { type: 'ingested', ref: message.ref, accepted: 1, rejected: 0, rejections: [] }
      },
    },
    {
      id: 'stream-topics-without-bound',
      description:
        'A connection takes any number of topics: the one past the quota is acknowledged like the others',
      targets: ['stream.subscriptions-per-connection'],
      streamMessage(message) {
        const detail = (message.error as Json | undefined)?.detail as Json | undefined
        return message.type === 'error' && detail?.quota === 'stream_subscriptions_per_socket'
          ? { type: 'subscribed', topic: message.topic }
          : message
      },
    },
    {
      id: 'batch-event-without-rejected',
      description: 'ingest.batch_accepted deliveries count the rejected records as 0',
      targets: ['ingest.batch-event'],
      delivery(req) {
        const body = parseJson(req.body)
        if (body?.event !== 'ingest.batch_accepted') return req
        return { ...req, body: JSON.stringify({ ...body, rejected: 0 }) }
      },
    },
  ]
}
