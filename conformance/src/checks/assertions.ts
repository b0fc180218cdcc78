/**
 * Assertions the families share: the error envelope of spec §7, RFC 3339 timestamps of spec §1 and the trace's policy
 * decisions of spec §2.
 */
import { type HttpResponse, obj } from '../http.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'

/** RFC 3339 date-time (§5.6), with the leap-second and lower-case allowances. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/

export function isRfc3339(value: unknown): boolean {
  if (typeof value !== 'string') return false
  const m = RFC3339.exec(value)
  if (!m) return false
  const [, , mo, d, h, mi, s] = m.map(Number) as number[]
  return (
    mo! >= 1 &&
    mo! <= 12 &&
    d! >= 1 &&
    d! <= 31 &&
    h! <= 23 &&
    mi! <= 59 &&
    s! <= 60 &&
    !Number.isNaN(Date.parse(value))
  )
}

/** Problems with the spec §7 envelope `{error: {code, message, detail, request_id}}`, or [] when it is right. */
export function envelopeProblems(body: unknown): string[] {
  const problems: string[] = []
  const error = obj(body).error
  if (error === undefined || error === null || typeof error !== 'object')
    return [`no "error" object in ${short(body, 200)}`]
  const e = error as Record<string, unknown>
  if (typeof e.code !== 'string' || e.code === '') problems.push('error.code is not a non-empty string')
  // §7 "error.message | string | Human-readable text.": an empty or blank string is no text for anyone to read.
  if (typeof e.message !== 'string') problems.push('error.message is not a string')
  else if (e.message.trim() === '') problems.push('error.message is empty (§7: human-readable text)')
  if (e.detail === null || typeof e.detail !== 'object' || Array.isArray(e.detail))
    problems.push('error.detail is not an object')
  if (typeof e.request_id !== 'string' || e.request_id === '')
    problems.push('error.request_id is not a non-empty string')
  return problems
}

export function expectEnvelope(res: HttpResponse, what: string): Record<string, unknown> {
  const problems = envelopeProblems(res.body)
  if (problems.length > 0)
    fail(`${what}: the ${res.status} answer breaks the error envelope: ${problems.join('; ')}`)
  return obj(obj(res.body).error)
}

export function expectError(
  res: HttpResponse,
  status: number,
  what: string,
  code?: string,
): Record<string, unknown> {
  assert(res.status === status, `${what}: expected ${status}, got ${res.status} ${short(res.body)}`)
  const error = expectEnvelope(res, what)
  if (code !== undefined)
    assert(error.code === code, `${what}: expected error.code "${code}", got "${String(error.code)}"`)
  return error
}

/** Timestamp-looking fields anywhere in a body, with their JSON paths. */
export function timestampFields(body: unknown, path = ''): Array<{ path: string; value: unknown }> {
  const out: Array<{ path: string; value: unknown }> = []
  if (Array.isArray(body)) {
    for (const [i, v] of body.entries()) out.push(...timestampFields(v, `${path}[${i}]`))
  } else if (body && typeof body === 'object') {
    for (const [k, v] of Object.entries(body)) {
      const p = path ? `${path}.${k}` : k
      if ((k === 'ts' || k.endsWith('_at')) && v !== null) out.push({ path: p, value: v })
      else if (v && typeof v === 'object' && k !== 'inputs' && k !== 'body' && k !== 'config')
        out.push(...timestampFields(v, p))
    }
  }
  return out
}

/**
 * A trace frame recording a decision of the gate other than `allow` (a step held for approval, a call refused): §2
 * "The trace lists every step, tool call, policy decision and approval", a frame's `policy` being the "Policy
 * decision", whose values beyond `allow` are the deployment's ("Allowed values of trace `kind` and `policy` beyond
 * the two named: not shown").
 */
export function decidesOtherThanAllow(frame: Record<string, unknown>): boolean {
  return typeof frame.policy === 'string' && frame.policy !== '' && frame.policy !== 'allow'
}
