import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { canonicalize, sameJson } from '../src/canonical.js'
import { resolveConfig } from '../src/config.js'
import {
  hmacHex,
  matchingConstruction,
  parseSignature,
  signBody,
  signedString,
  templateProblem,
  verifySignature,
} from '../src/signature.js'

const body = {
  event: 'run.awaiting_approval',
  run_id: 'run_1',
  ts: '2026-11-23T09:00:00.000Z',
  payload_preview: { b: 2, a: 1 },
}
const secret = 'conformance-secret'
const now = 1_795_000_000

describe('RFC 8785 canonical JSON', () => {
  it('sorts keys by code unit, drops no values and serialises numbers the ECMAScript way', () => {
    expect(canonicalize({ b: 1, a: [true, null, 'x'], c: { z: 1e21, y: 0.1 } })).toBe(
      '{"a":[true,null,"x"],"b":1,"c":{"y":0.1,"z":1e+21}}',
    )
    expect(canonicalize({ '\u00e9': 1, z: 2, Z: 3 })).toBe('{"Z":3,"z":2,"é":1}')
    expect(() => canonicalize({ x: Number.NaN })).toThrow()
  })
})

describe('the same JSON value', () => {
  it('whatever the order of object members, never of array items', () => {
    expect(sameJson({ a: 1, b: { c: [1, 2], d: null } }, { b: { d: null, c: [1, 2] }, a: 1 })).toBe(true)
    expect(sameJson([1, 2], [2, 1])).toBe(false)
    expect(sameJson({ a: 1 }, { a: 1, b: 2 })).toBe(false)
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true)
    expect(sameJson(undefined, undefined)).toBe(true)
    expect(sameJson(undefined, null)).toBe(false)
    expect(sameJson('1', 1)).toBe(false)
  })
})

describe('webhook signature', () => {
  it('parses the spec form and rejects others', () => {
    expect(parseSignature('t=1,v1=ab,v1=cd')).toEqual({ t: '1', v1: ['ab', 'cd'] })
    expect(parseSignature('v1=ab,t=1')).toBeUndefined()
    expect(parseSignature('t=1')).toBeUndefined()
    expect(parseSignature('t=1,v1=XYZ')).toBeUndefined()
    expect(parseSignature(42)).toBeUndefined()
  })

  it('verifies HMAC-SHA256 over "<t>." + JCS(body without signature)', () => {
    const signed = { ...body, signature: signBody(secret, body, now) }
    expect(verifySignature(signed, secret, now)).toEqual({ ok: true })
    const expected = hmacHex(secret, `${now}.${canonicalize(body)}`)
    expect(signed.signature).toBe(`t=${now},v1=${expected}`)
    expect(signedString(String(now), signed)).toBe(`${now}.${canonicalize(body)}`)
  })

  it('does not verify a tampered body, a wrong secret or a stale timestamp', () => {
    const signed = { ...body, signature: signBody(secret, body, now) }
    expect(verifySignature({ ...signed, run_id: 'run_2' }, secret, now).ok).toBe(false)
    expect(verifySignature(signed, 'other-secret', now).ok).toBe(false)
    expect(verifySignature(signed, secret, now + 301).ok).toBe(false)
    expect(verifySignature(signed, secret, now + 299).ok).toBe(true)
  })

  it('accepts any matching v1 during a secret rotation', () => {
    const good = signBody(secret, body, now).split(',v1=')[1]
    const rotated = { ...body, signature: `t=${now},v1=${'0'.repeat(64)},v1=${good}` }
    expect(verifySignature(rotated, secret, now).ok).toBe(true)
  })
})

describe('the core signature check accepts any common construction, under the subscription’s secret only', () => {
  const t = '1795000000'
  const withSig = (signature: string) => {
    const b = { ...body, id: 'evt_1', signature }
    return { b, raw: JSON.stringify(b) }
  }
  const stripeRaw = JSON.stringify(body) // what a Stripe-like server signs before it adds `signature`
  const cases: Array<[string, string]> = [
    ['"<t>." + raw body', `${t}.${stripeRaw.replace(/}$/, ',"id":"evt_1"}')}`],
    ['"<t>." + JCS', `${t}.${canonicalize({ ...body, id: 'evt_1' })}`],
    ['Standard Webhooks "<id>.<t>." + body', `evt_1.${t}.${JSON.stringify({ ...body, id: 'evt_1' })}`],
  ]
  for (const [name, message] of cases) {
    it(`verifies ${name}`, () => {
      const { b, raw } = withSig(`t=${t},v1=${hmacHex(secret, message)}`)
      expect(matchingConstruction(raw, b, secret, 'evt_1')).toBeDefined()
      expect(matchingConstruction(raw, b, 'another-secret', 'evt_1')).toBeUndefined()
    })
  }

  it('refuses a digest over something else, and a malformed field', () => {
    const { b, raw } = withSig(`t=${t},v1=${hmacHex(secret, `${t}${JSON.stringify(body)}`)}`)
    expect(matchingConstruction(raw, b, secret, 'evt_1')).toBeUndefined()
    const bad = withSig('sha256=abc')
    expect(matchingConstruction(bad.raw, bad.b, secret, 'evt_1')).toBeUndefined()
  })
})

describe('the signed string is declarable (signature.signed), and discovery tries the common forms first', () => {
  const t = '1795000000'
  const rest = { ...body, id: 'evt_1' }
  const raw = (v1: string) => `${JSON.stringify(rest).slice(0, -1)},"signature":"t=${t},v1=${v1}"}`
  const signed = (message: string) => {
    const text = raw(hmacHex(secret, message))
    return { text, b: JSON.parse(text) as Record<string, unknown> }
  }

  it('discovers a digest over the body alone', () => {
    const { text, b } = signed(JSON.stringify(rest))
    expect(matchingConstruction(text, b, secret, 'evt_1')).toMatch(/^"\{body\}"/)
    expect(matchingConstruction(text, b, 'another-secret', 'evt_1')).toBeUndefined()
  })

  it('discovers "<timestamp header>.<body>" for a header named timestamp', () => {
    const headers = { 'x-webhook-timestamp': '1795000001' }
    const { text, b } = signed(`1795000001.${JSON.stringify(rest)}`)
    expect(matchingConstruction(text, b, secret, 'evt_1', headers)).toMatch(/x-webhook-timestamp/)
    expect(matchingConstruction(text, b, secret, 'evt_1', {})).toBeUndefined()
  })

  it('a declared template is the only arrangement accepted', () => {
    const bodyOnly = signed(JSON.stringify(rest))
    expect(matchingConstruction(bodyOnly.text, bodyOnly.b, secret, 'evt_1', {}, '{body}')).toBeDefined()
    expect(matchingConstruction(bodyOnly.text, bodyOnly.b, secret, 'evt_1', {}, '{t}.{body}')).toBeUndefined()
    const stripe = signed(`${t}.${JSON.stringify(rest)}`)
    expect(matchingConstruction(stripe.text, stripe.b, secret, 'evt_1', {}, '{t}.{body}')).toBeDefined()
    expect(matchingConstruction(stripe.text, stripe.b, secret, 'evt_1', {}, '{body}')).toBeUndefined()
    const stamped = signed(`99.${JSON.stringify(rest)}`)
    const template = '{header:X-Stamp}.{body}'
    expect(
      matchingConstruction(stamped.text, stamped.b, secret, 'evt_1', { 'x-stamp': '99' }, template),
    ).toBeDefined()
    expect(matchingConstruction(stamped.text, stamped.b, secret, 'evt_1', {}, template)).toBeUndefined()
  })

  it('the config refuses a template without {body} or with an unknown placeholder', () => {
    expect(templateProblem('{t}.{body}')).toBeUndefined()
    expect(templateProblem('{t}')).toMatch(/must contain \{body\}/)
    expect(templateProblem('{ts}.{body}')).toMatch(/unknown placeholder \{ts\}/)
    const dir = mkdtempSync(join(tmpdir(), 'sig-config-'))
    const file = (signature: unknown) => {
      const path = join(dir, `c${Math.random()}.json`)
      writeFileSync(path, JSON.stringify({ signature }))
      return path
    }
    expect(resolveConfig(['--config', file({ signed: '{body}' })]).config.signatureTemplate).toBe('{body}')
    expect(() => resolveConfig(['--config', file({ signed: '{t}' })])).toThrow(
      /signature.signed must contain/,
    )
  })
})
