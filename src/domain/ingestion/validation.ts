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

export type RecordVerdict =
  | { ok: true; record: IngestRecord }
  | { ok: false; code: RejectionCode; message: string }

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31
}

/** The ASCII decimal number of `value[at, at + n)`, or -1 when any of those characters is not a digit. */
function digitsAt(value: string, at: number, n: number): number {
  let result = 0
  for (let i = at; i < at + n; i++) {
    const d = value.charCodeAt(i) - 48
    if (!(d >= 0 && d <= 9)) return -1
    result = result * 10 + d
  }
  return result
}

/**
 * RFC 3339 §5.6 date-time (full-date "T" full-time, with a mandatory offset "Z" or ±hh:mm) with a time zone and a
 * real calendar date (no 2026-02-30, no 24:00, offsets within ±23:59). Read character by character: it runs once
 * per ingested record, where a regex match and its capture array cost more than the whole check.
 */
export function isRfc3339(value: string): boolean {
  const year = digitsAt(value, 0, 4)
  const month = digitsAt(value, 5, 2)
  const day = digitsAt(value, 8, 2)
  const hour = digitsAt(value, 11, 2)
  const minute = digitsAt(value, 14, 2)
  const second = digitsAt(value, 17, 2)
  // A month or day that is no number (-1) fails the calendar check below; a shorter string reads no digits (-1).
  if (year < 0 || hour < 0 || minute < 0 || second < 0) return false
  const t = value[10]
  if (
    value[4] !== '-' ||
    value[7] !== '-' ||
    (t !== 'T' && t !== 't') ||
    value[13] !== ':' ||
    value[16] !== ':'
  ) {
    return false
  }
  let at = 19
  if (value[at] === '.') {
    const first = ++at
    while (digitsAt(value, at, 1) >= 0) at++ // past the end there is no digit
    if (at === first) return false
  }
  let offset = 0
  const zone = value[at]
  if (zone === 'Z' || zone === 'z') {
    if (at + 1 !== value.length) return false
  } else if (zone === '+' || zone === '-') {
    if (at + 6 !== value.length || value[at + 3] !== ':') return false
    const offsetHour = digitsAt(value, at + 1, 2)
    const offsetMinute = digitsAt(value, at + 4, 2)
    if (offsetHour < 0 || offsetMinute < 0 || offsetHour > 23 || offsetMinute > 59) return false
    offset = (zone === '-' ? -1 : 1) * (offsetHour * 60 + offsetMinute)
  } else return false
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false
  if (hour > 23 || minute > 59 || second > 60) return false
  // A leap second (:60) is inserted at the end of a UTC day (RFC 3339 §5.7), so it must read 23:59:60 once the
  // offset is taken off: the same rule the contract's `format: date-time` validators apply.
  if (second === 60) {
    const utcMinute = (((hour * 60 + minute - offset) % 1440) + 1440) % 1440
    if (utcMinute !== 23 * 60 + 59) return false
  }
  return true
}

function isRecordField(key: string): boolean {
  return key === 'id' || key === 'ts' || key === 'source' || key === 'policy_class' || key === 'body'
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isLabel(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= max && !hasControlCharacter(value)
}

/** How a message lists names (fields, classes). */
const LIST = ', '

/** Control characters are refused so ids and labels stay printable in logs and UIs. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/

function hasControlCharacter(value: string): boolean {
  return CONTROL_CHARACTER.test(value)
}

/** Checks one record's shape and values; duplicates are judged by the caller, which knows the connector. */
export function validateRecord(raw: unknown, policyClasses: readonly string[]): RecordVerdict {
  if (!isPlainObject(raw))
    return { ok: false, code: 'invalid_field', message: 'A record must be a JSON object' }
  const complete =
    raw.id != null && raw.ts != null && raw.source != null && raw.policy_class != null && raw.body != null
  if (!complete) {
    const missing = RECORD_FIELDS.filter((f) => raw[f] === undefined || raw[f] === null)
    return { ok: false, code: 'missing_field', message: `Missing required field(s): ${missing.join(LIST)}` }
  }
  const keys = Object.keys(raw)
  const unknown = keys.every(isRecordField) ? [] : keys.filter((k) => !isRecordField(k))
  if (unknown.length > 0) {
    // Refused rather than dropped: the lineage hash must cover everything the client sent.
    return { ok: false, code: 'invalid_field', message: `Unknown field(s): ${unknown.join(LIST)}` }
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
  // How deep a body may nest is bounded where each surface reads the request, before anything recursive walks it
  // (src/domain/json-depth.ts: the whole request, so a body never reaches that depth here).
  if (!isPlainObject(raw.body))
    return { ok: false, code: 'invalid_field', message: 'body must be a JSON object' }
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
      message: `policy_class "${raw.policy_class}" is not allowed in this workspace (allowed: ${policyClasses.join(LIST)})`,
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
