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

/** Parses `t=<digits>,v1=<hex>[,v1=<hex>...]`; undefined when the form is wrong. */
export function parseSignature(value: unknown): ParsedSignature | undefined {
  if (typeof value !== 'string') return undefined
  const parts = value.split(',')
  const first = parts.shift()
  const t = /^t=(\d+)$/.exec(first ?? '')?.[1]
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
  const age = Math.abs(nowSeconds - Number(parsed.t))
  if (age > toleranceSeconds)
    return { ok: false, reason: `timestamp t=${parsed.t} is ${age} s away from now` }
  return { ok: true }
}
