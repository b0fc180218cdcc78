/**
 * Per-record checks of an ingest batch. Each record is judged on its own so one bad record never costs its
 * neighbours; the first failing rule (in the order of the codes below) names the rejection.
 */
export const REJECTION_CODES = [
  'missing_field',
  'invalid_field',
  'invalid_timestamp',
  'policy_class_not_allowed',
  'duplicate_id',
] as const
export type RejectionCode = (typeof REJECTION_CODES)[number]

/** The five spec §2 fields, exactly what is stored and hashed. */
export interface IngestRecord {
  id: string
  ts: string
  source: string
  policy_class: string
  body: Record<string, unknown>
}

export interface Rejection {
  index: number
  id: string | null
  code: RejectionCode
  message: string
}

export const RECORD_FIELDS = ['id', 'ts', 'source', 'policy_class', 'body'] as const
export const MAX_ID_LENGTH = 256
export const MAX_LABEL_LENGTH = 256
/** Deeper bodies are refused: canonicalisation and storage walk the body recursively. */
export const MAX_BODY_DEPTH = 64

export type RecordVerdict =
  | { ok: true; record: IngestRecord }
  | { ok: false; code: RejectionCode; message: string }

// RFC 3339 §5.6 date-time: full-date "T" full-time, with a mandatory offset ("Z" or ±hh:mm).
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28
  return [4, 6, 9, 11].includes(month) ? 30 : 31
}

/** RFC 3339 with a time zone and a real calendar date (no 2026-02-30, no 24:00, offsets within ±23:59). */
export function isRfc3339(value: string): boolean {
  const m = RFC3339.exec(value)
  if (!m) return false
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ]
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false
  if (hour > 23 || minute > 59) return false
  if (m[7] !== undefined && (Number(m[8]) > 23 || Number(m[9]) > 59)) return false
  if (second > 60) return false
  // A leap second (:60) is inserted at the end of a UTC day (RFC 3339 §5.7), so it must read 23:59:60 once the
  // offset is taken off: the same rule the contract's `format: date-time` validators apply.
  if (second === 60) {
    const offset = m[7] === undefined ? 0 : (m[7] === '-' ? -1 : 1) * (Number(m[8]) * 60 + Number(m[9]))
    const utcMinute = (((hour * 60 + minute - offset) % 1440) + 1440) % 1440
    if (utcMinute !== 23 * 60 + 59) return false
  }
  return true
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isLabel(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= max && !hasControlCharacter(value)
}

/** Whether any value sits more than `max` containers deep; iterative, so a hostile depth cannot overflow the stack. */
function depthExceeds(root: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[root, 1]]
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number]
    if (typeof value !== 'object' || value === null) continue
    if (depth > max) return true
    for (const child of Object.values(value)) stack.push([child, depth + 1])
  }
  return false
}

/** Control characters are refused so ids and labels stay printable in logs and UIs. */
function hasControlCharacter(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i)
    if (code < 0x20 || code === 0x7f) return true
  }
  return false
}

/** Checks one record's shape and values; duplicates are judged by the caller, which knows the connector. */
export function validateRecord(raw: unknown, policyClasses: readonly string[]): RecordVerdict {
  if (!isPlainObject(raw))
    return { ok: false, code: 'invalid_field', message: 'A record must be a JSON object' }
  const missing = RECORD_FIELDS.filter((f) => raw[f] === undefined || raw[f] === null)
  if (missing.length > 0) {
    return { ok: false, code: 'missing_field', message: `Missing required field(s): ${missing.join(', ')}` }
  }
  const unknown = Object.keys(raw).filter((k) => !(RECORD_FIELDS as readonly string[]).includes(k))
  if (unknown.length > 0) {
    // Refused rather than dropped: the lineage hash must cover everything the client sent.
    return { ok: false, code: 'invalid_field', message: `Unknown field(s): ${unknown.join(', ')}` }
  }
  if (!isLabel(raw.id, MAX_ID_LENGTH)) {
    return {
      ok: false,
      code: 'invalid_field',
      message: `id must be a string of 1 to ${MAX_ID_LENGTH} printable characters`,
    }
  }
  if (!isLabel(raw.source, MAX_LABEL_LENGTH)) {
    return {
      ok: false,
      code: 'invalid_field',
      message: `source must be a string of 1 to ${MAX_LABEL_LENGTH} printable characters`,
    }
  }
  if (!isLabel(raw.policy_class, MAX_LABEL_LENGTH)) {
    return {
      ok: false,
      code: 'invalid_field',
      message: `policy_class must be a string of 1 to ${MAX_LABEL_LENGTH} printable characters`,
    }
  }
  if (!isPlainObject(raw.body))
    return { ok: false, code: 'invalid_field', message: 'body must be a JSON object' }
  if (depthExceeds(raw.body, MAX_BODY_DEPTH)) {
    return { ok: false, code: 'invalid_field', message: `body nests deeper than ${MAX_BODY_DEPTH} levels` }
  }
  if (typeof raw.ts !== 'string' || !isRfc3339(raw.ts)) {
    return {
      ok: false,
      code: 'invalid_timestamp',
      message: 'ts must be an RFC 3339 date-time with a time zone and a real calendar date',
    }
  }
  if (!policyClasses.includes(raw.policy_class)) {
    return {
      ok: false,
      code: 'policy_class_not_allowed',
      message: `policy_class "${raw.policy_class}" is not allowed in this workspace (allowed: ${policyClasses.join(', ')})`,
    }
  }
  return {
    ok: true,
    record: { id: raw.id, ts: raw.ts, source: raw.source, policy_class: raw.policy_class, body: raw.body },
  }
}

/** The record's id for a rejection line, when it has a usable one. */
export function rejectionId(raw: unknown): string | null {
  return isPlainObject(raw) && typeof raw.id === 'string' ? raw.id : null
}

/** Connector ids are chosen by clients: 1..128 chars of [A-Za-z0-9_.:-] (the contract's path pattern). */
export function isConnectorId(value: string): boolean {
  return /^[A-Za-z0-9_.:-]{1,128}$/.test(value)
}
