/**
 * Webhook signatures. The spec (§5) fixes the field form `t=<timestamp>,v1=<hex_digest>` and HMAC-SHA256; the
 * reference profile fixes the signed string: `<t>.` + RFC 8785 JCS of the delivery body without `signature`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { canonicalize } from './canonical.js'

export interface ParsedSignature {
  t: string
  v1: string[]
}

/** The forms `t=` may take: spec §5.5 shows `t=<timestamp>` and leaves the timestamp's form open. */
export type TimestampForm = 'unix' | 'rfc3339' | 'any'

const T_FORMS: Record<TimestampForm, RegExp> = {
  unix: /^t=(\d+)$/,
  rfc3339: /^t=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))$/i,
  any: /^t=(\d+|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))$/i,
}

/** Seconds since the epoch of a `t=` value in either form. */
export function timestampSeconds(t: string): number {
  return /^\d+$/.test(t) ? Number(t) : Math.floor(Date.parse(t) / 1000)
}

/** Parses `t=<timestamp>,v1=<hex>[,v1=<hex>...]`; undefined when the form is wrong. */
export function parseSignature(value: unknown, form: TimestampForm = 'any'): ParsedSignature | undefined {
  if (typeof value !== 'string') return undefined
  const parts = value.split(',')
  const first = parts.shift()
  const t = T_FORMS[form].exec(first ?? '')?.[1]
  if (!t || parts.length === 0) return undefined
  const v1: string[] = []
  for (const p of parts) {
    const hex = /^v1=([0-9a-f]+)$/.exec(p)?.[1]
    if (!hex) return undefined
    v1.push(hex)
  }
  return { t, v1 }
}

/** A SHA-256 digest is 32 bytes: 64 lowercase hex characters. */
export function isSha256Hex(hex: string): boolean {
  return /^[0-9a-f]{64}$/.test(hex)
}

/** The string the reference profile signs. */
export function signedString(t: string, body: Record<string, unknown>): string {
  const { signature: _ignored, ...rest } = body
  return `${t}.${canonicalize(rest)}`
}

export function hmacHex(secret: string, message: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(message, 'utf8').digest('hex')
}

/** Signs a body the way the reference profile does (used by tests and by the mutants' re-signing). */
export function signBody(secret: string, body: Record<string, unknown>, t: number): string {
  return `t=${t},v1=${hmacHex(secret, signedString(String(t), body))}`
}

export interface VerifyResult {
  ok: boolean
  reason?: string
}

/** True when one of the `v1` digests is HMAC-SHA256(secret, signedString) and `t` is within the tolerance. */
export function verifySignature(
  body: Record<string, unknown>,
  secret: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): VerifyResult {
  const parsed = parseSignature(body.signature)
  if (!parsed)
    return { ok: false, reason: `signature field has the wrong form: ${JSON.stringify(body.signature)}` }
  const expected = Buffer.from(hmacHex(secret, signedString(parsed.t, body)), 'hex')
  const match = parsed.v1.some((hex) => {
    const got = Buffer.from(hex, 'hex')
    return got.length === expected.length && timingSafeEqual(got, expected)
  })
  if (!match)
    return {
      ok: false,
      reason: 'no v1 digest matches HMAC-SHA256(secret, "<t>." + JCS(body without signature))',
    }
  const age = Math.abs(nowSeconds - timestampSeconds(parsed.t))
  if (!(age <= toleranceSeconds))
    return { ok: false, reason: `timestamp t=${parsed.t} is ${age} s away from now` }
  return { ok: true }
}

/**
 * A declared signed string (`signature.signed` in --config): `{t}` the `t=` value of the signature field, `{body}`
 * the delivered body without its own `signature` member, `{id}` the event id (the `webhook-id` header, else the
 * body's `id`), `{header:NAME}` a delivery header's value (a timestamp sent as a header). "{t}.{body}" is Stripe's
 * arrangement, "{body}" the body alone, "{header:x-timestamp}.{body}" a timestamp header's.
 */
export const TEMPLATE_PLACEHOLDER = /\{(t|body|id|header:[A-Za-z0-9-]+)\}/g

/** Why a declared template cannot be used, or undefined when it can. */
export function templateProblem(template: string): string | undefined {
  if (!template.includes('{body}'))
    return 'must contain {body} (what is signed must cover the delivered body)'
  const unknown = template.replace(TEMPLATE_PLACEHOLDER, '').match(/\{[^}]*\}/)
  if (unknown) return `has an unknown placeholder ${unknown[0]} (use {t}, {body}, {id}, {header:NAME})`
  return undefined
}

/** A delivery's headers, lower-case names, as Node hands them. */
export type DeliveryHeaders = Record<string, string | string[] | undefined>

/** What a delivery offers a template: its headers and event id. */
export interface DeliveryParts {
  headers?: DeliveryHeaders
  eventId?: string
}

/** The template filled in; undefined when it names a header or id the delivery does not carry. */
export function fillTemplate(
  template: string,
  t: string,
  body: string,
  parts: DeliveryParts,
): string | undefined {
  let missing = false
  const out = template.replace(TEMPLATE_PLACEHOLDER, (_, name: string) => {
    if (name === 't') return t
    if (name === 'body') return body
    const header = parts.headers?.[name.slice(7).toLowerCase()]
    const value = name === 'id' ? parts.eventId : Array.isArray(header) ? header.join(', ') : header
    if (value === undefined) missing = true
    return value ?? ''
  })
  return missing ? undefined : out
}

/**
 * The arrangements discovery tries when none is declared, the common ones first: Stripe's `<t>.<body>`, Standard
 * Webhooks' `<id>.<t>.<body>`, the body alone, and `<timestamp header>.<body>` for each delivery header whose name
 * says timestamp.
 */
export function discoveredTemplates(headers: DeliveryHeaders = {}): string[] {
  const stamped = Object.keys(headers)
    .filter((h) => /timestamp/i.test(h))
    .sort()
    .map((h) => `{header:${h}}.{body}`)
  return ['{t}.{body}', '{id}.{t}.{body}', '{body}', ...stamped]
}

/**
 * The spec does not show the signed string (§5), so the core check accepts the declared arrangement, else any of
 * the common ones (`discoveredTemplates`), each over the body as delivered without its own `signature` member
 * (which cannot sign itself), or that body canonical (RFC 8785) or compact, HMAC-SHA256 under the subscription's
 * secret.
 */
export function signedCandidates(
  t: string,
  raw: string,
  body: Record<string, unknown>,
  eventId: string | undefined,
  headers: DeliveryHeaders = {},
  template?: string,
): Array<{ name: string; message: string }> {
  const { signature: _ignored, ...rest } = body
  const rawWithout = raw
    .replace(/,\s*"signature"\s*:\s*"(?:[^"\\]|\\.)*"/, '')
    .replace(/"signature"\s*:\s*"(?:[^"\\]|\\.)*"\s*,?/, '')
  const bodies = [
    { name: 'raw body without signature', text: rawWithout },
    { name: 'JCS body without signature', text: canonicalize(rest) },
    { name: 'compact JSON body without signature', text: JSON.stringify(rest) },
  ]
  const out: Array<{ name: string; message: string }> = []
  for (const arrangement of template ? [template] : discoveredTemplates(headers)) {
    for (const b of bodies) {
      const message = fillTemplate(arrangement, t, b.text, { headers, ...(eventId ? { eventId } : {}) })
      if (message !== undefined) out.push({ name: `"${arrangement}" with {body} the ${b.name}`, message })
    }
  }
  return out
}

/** Secret bytes to try: the secret as UTF-8 and, for a Standard Webhooks `whsec_<base64>` secret, its key. */
function keys(secret: string): Buffer[] {
  const out = [Buffer.from(secret, 'utf8')]
  if (secret.startsWith('whsec_')) out.push(Buffer.from(secret.slice(6), 'base64'))
  return out
}

/** The construction under which one of the `v1` digests verifies, or undefined when none does. */
export function matchingConstruction(
  raw: string,
  body: Record<string, unknown>,
  secret: string,
  eventId: string | undefined,
  headers: DeliveryHeaders = {},
  template?: string,
): string | undefined {
  const parsed = parseSignature(body.signature)
  if (!parsed) return undefined
  const digests = parsed.v1.map((hex) => Buffer.from(hex, 'hex'))
  for (const candidate of signedCandidates(parsed.t, raw, body, eventId, headers, template)) {
    for (const key of keys(secret)) {
      const want = createHmac('sha256', key).update(candidate.message, 'utf8').digest()
      if (digests.some((d) => d.length === want.length && timingSafeEqual(d, want))) return candidate.name
    }
  }
  return undefined
}
