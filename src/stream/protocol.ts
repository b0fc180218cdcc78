import { isConnectorId } from '../domain/ingestion/validation.js'
import { tooDeepAt, tooDeepError } from '../domain/json-depth.js'
import { findInexactNumber, inexactNumberMessage } from '../domain/json-numbers.js'
import { findUnstorableText, unstorableReason } from '../domain/text.js'
import type { StreamClientKind } from '../surface/contract-types.js'

/**
 * The /v1/stream wire protocol (docs/stream.md): JSON text frames, each with a `type`. Client messages are
 * checked by hand here so every malformed one gets a precise `invalid_request` error and the socket stays open.
 */
export type ClientMessage =
  | Kind<'subscribe', { topics: string[]; since: Record<string, number> }>
  | Kind<'unsubscribe', { topics: string[] }>
  | Kind<'ping', unknown>
  | Kind<'ingest', { connectorId: string; records: unknown[]; ref: string | undefined }>

/** A client message of one kind: the kind must be one the contract lists (`StreamClientMessage.type`). */
type Kind<K extends StreamClientKind, Fields> = { type: K } & Fields

export const MAX_TOPICS_PER_MESSAGE = 100
export const MAX_TOPIC_LENGTH = 256
export const MAX_REF_LENGTH = 128

export type ParseResult =
  | { ok: true; message: ClientMessage }
  | { ok: false; message: string; ref?: string | undefined }

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function parseTopics(v: unknown): string[] | string {
  if (!Array.isArray(v) || v.length === 0) return 'topics must be a non-empty array of strings'
  if (v.length > MAX_TOPICS_PER_MESSAGE) return `topics holds at most ${MAX_TOPICS_PER_MESSAGE} entries`
  for (const t of v) {
    if (typeof t !== 'string' || t.length === 0 || t.length > MAX_TOPIC_LENGTH) {
      return `each topic must be a string of 1 to ${MAX_TOPIC_LENGTH} characters`
    }
  }
  return [...new Set(v as string[])]
}

export function parseClientMessage(text: string): ParseResult {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return { ok: false, message: 'The message is not valid JSON' }
  }
  if (!isObject(raw)) return { ok: false, message: 'The message must be a JSON object' }
  const deep = tooDeepAt(raw)
  if (deep !== undefined) return { ok: false, message: tooDeepError('message', deep).message }
  const unstorable = findUnstorableText(raw)
  if (unstorable) {
    const ref = typeof raw.ref === 'string' && !unstorableReason(raw.ref) ? raw.ref : undefined
    return { ok: false, message: `${unstorable.path}: ${unstorable.message}`, ref }
  }
  const inexact = findInexactNumber(text)
  const result: ParseResult = inexact
    ? { ok: false, message: `${inexact.path}: ${inexactNumberMessage(inexact.literal)}` }
    : parseObject(raw)
  // A refused message still names the client's `ref`, so the client can tell which of its requests failed.
  if (!result.ok && typeof raw.ref === 'string' && raw.ref.length <= MAX_REF_LENGTH)
    return { ...result, ref: raw.ref }
  return result
}

function parseObject(raw: Record<string, unknown>): ParseResult {
  switch (raw.type) {
    case 'ping':
      return { ok: true, message: { type: 'ping' } }
    case 'unsubscribe': {
      const topics = parseTopics(raw.topics)
      if (typeof topics === 'string') return { ok: false, message: topics }
      return { ok: true, message: { type: 'unsubscribe', topics } }
    }
    case 'subscribe': {
      const topics = parseTopics(raw.topics)
      if (typeof topics === 'string') return { ok: false, message: topics }
      const since: Record<string, number> = {}
      if (raw.since !== undefined) {
        if (!isObject(raw.since)) return { ok: false, message: 'since must be an object of topic → seq' }
        for (const [topic, seq] of Object.entries(raw.since)) {
          if (!Number.isSafeInteger(seq) || (seq as number) < 0) {
            return { ok: false, message: `since["${topic}"] must be a non-negative integer` }
          }
          since[topic] = seq as number
        }
      }
      return { ok: true, message: { type: 'subscribe', topics, since } }
    }
    case 'ingest': {
      if (raw.ref !== undefined && (typeof raw.ref !== 'string' || raw.ref.length > MAX_REF_LENGTH)) {
        return { ok: false, message: `ref must be a string of at most ${MAX_REF_LENGTH} characters` }
      }
      if (typeof raw.connector_id !== 'string' || !isConnectorId(raw.connector_id)) {
        return { ok: false, message: 'connector_id must be 1 to 128 characters of [A-Za-z0-9_.:-]' }
      }
      if (!Array.isArray(raw.records)) return { ok: false, message: 'records must be an array of records' }
      return {
        ok: true,
        message: {
          type: 'ingest',
          connectorId: raw.connector_id,
          records: raw.records,
          ref: raw.ref as string | undefined,
        },
      }
    }
    default:
      return { ok: false, message: 'type must be one of subscribe, unsubscribe, ping, ingest' }
  }
}
