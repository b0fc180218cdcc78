import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isConnectorId, isRfc3339, validateRecord } from '../../src/domain/ingestion/validation.js'

const CLASSES = ['public', 'internal']
const good = { id: 'r1', ts: '2026-11-23T06:00:00Z', source: 'crm', policy_class: 'public', body: { a: 1 } }

const ACCEPTED = [
  '2026-11-23T06:00:00Z',
  '2026-11-23t06:00:00z',
  '2026-11-23T06:00:00.123456+05:30',
  '2024-02-29T23:59:59-08:00',
  '2000-02-29T00:00:00Z',
  '2026-12-31T23:59:60Z',
  '2026-12-31T15:59:60-08:00', // 23:59:60 UTC
]

describe('RFC 3339 timestamps', () => {
  it.each(ACCEPTED)('accepts %s', (ts) => expect(isRfc3339(ts)).toBe(true))

  it('accepts only what the contract’s `format: date-time` accepts, since stored records echo ts', () => {
    const ajv = new Ajv2020()
    addFormats.default(ajv)
    const dateTime = ajv.compile({ type: 'string', format: 'date-time' })
    for (const ts of ACCEPTED) expect(dateTime(ts), ts).toBe(true)
  })

  it.each([
    '2026-11-23T06:00:00', // no time zone
    '2026-11-23 06:00:00Z', // space instead of T
    '2026-11-23',
    '2026-02-29T00:00:00Z', // not a leap year
    '1900-02-29T00:00:00Z', // century, not a leap year
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-10T00:00:00Z',
    '2026-11-00T00:00:00Z',
    '2026-11-23T24:00:00Z',
    '2026-11-23T23:60:00Z',
    '2026-11-23T23:58:60Z', // leap second only at the end of a UTC day
    '2026-11-23T12:59:60Z',
    '2026-12-31T23:59:60+01:00', // 22:59:60 UTC
    '2026-11-23T06:00:00+24:00',
    '2026-11-23T06:00:00+0530',
    '2026-11-23T06:00:00.Z',
    '26-11-23T06:00:00Z',
    '',
  ])('refuses %j', (ts) => expect(isRfc3339(ts)).toBe(false))
})

/** The rule as first written, with a regex: the character-by-character reader must agree with it everywhere. */
function referenceRfc3339(value: string): boolean {
  const m =
    /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/.exec(value)
  if (!m) return false
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as number[] as [
    number,
    number,
    number,
    number,
    number,
    number,
  ]
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31
  if (month < 1 || month > 12 || day < 1 || day > days) return false
  if (hour > 23 || minute > 59) return false
  if (m[7] !== undefined && (Number(m[8]) > 23 || Number(m[9]) > 59)) return false
  if (second > 60) return false
  if (second === 60) {
    const offset = m[7] === undefined ? 0 : (m[7] === '-' ? -1 : 1) * (Number(m[8]) * 60 + Number(m[9]))
    if ((((hour * 60 + minute - offset) % 1440) + 1440) % 1440 !== 23 * 60 + 59) return false
  }
  return true
}

describe('RFC 3339 timestamps against the regex reference', () => {
  const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'))
  const nearlyValid = fc
    .tuple(
      fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, '0')),
      two(19),
      two(39),
      fc.constantFrom('T', 't', ' '),
      two(29),
      two(69),
      two(69),
      fc.constantFrom('', '.', '.5', '.123456789'),
      fc.oneof(
        fc.constantFrom('Z', 'z', '', '+0530', 'x'),
        fc.tuple(fc.constantFrom('+', '-'), two(29), two(69)).map(([s, h, m]) => `${s}${h}:${m}`),
      ),
    )
    .map(([y, mo, d, t, h, mi, s, f, z]) => `${y}-${mo}-${d}${t}${h}:${mi}:${s}${f}${z}`)
  const noise = fc.string({ unit: fc.constantFrom(...'0123456789-:TtZz+.x'.split('')), maxLength: 32 })

  it('agrees on near-valid timestamps and on noise', () => {
    fc.assert(
      fc.property(fc.oneof(nearlyValid, noise), (ts) => isRfc3339(ts) === referenceRfc3339(ts)),
      { numRuns: 20_000 },
    )
  })
})

describe('record validation', () => {
  it('accepts a good record and keeps exactly its five fields', () => {
    expect(validateRecord(good, CLASSES)).toEqual({ ok: true, record: good })
  })

  it.each([
    [null, 'invalid_field'],
    [[good], 'invalid_field'],
    ['r1', 'invalid_field'],
    [{ ...good, id: undefined }, 'missing_field'],
    [{ ...good, body: null }, 'missing_field'],
    [{ id: 'x' }, 'missing_field'],
    [{ ...good, extra: 1 }, 'invalid_field'],
    [{ ...good, id: '' }, 'invalid_field'],
    [{ ...good, id: 7 }, 'invalid_field'],
    [{ ...good, id: 'a\nb' }, 'invalid_field'],
    [{ ...good, id: 'x'.repeat(257) }, 'invalid_field'],
    [{ ...good, source: 3 }, 'invalid_field'],
    [{ ...good, policy_class: [] }, 'invalid_field'],
    [{ ...good, body: [1] }, 'invalid_field'],
    [{ ...good, body: 'text' }, 'invalid_field'],
    [{ ...good, ts: 1700000000 }, 'invalid_timestamp'],
    [{ ...good, ts: '2026-02-30T00:00:00Z' }, 'invalid_timestamp'],
    [{ ...good, policy_class: 'secret' }, 'policy_class_not_allowed'],
  ])('rejects %j with %s', (record, code) => {
    const verdict = validateRecord(record, CLASSES)
    expect(verdict.ok).toBe(false)
    if (!verdict.ok) {
      expect(verdict.code).toBe(code)
      expect(verdict.message.length).toBeGreaterThan(0)
    }
  })

  it('names every missing field', () => {
    const verdict = validateRecord({ id: 'x', body: {} }, CLASSES)
    expect(verdict).toMatchObject({ ok: false, code: 'missing_field' })
    if (!verdict.ok) expect(verdict.message).toContain('ts, source, policy_class')
  })
})

describe('connector ids', () => {
  it('follow the contract pattern', () => {
    expect(isConnectorId('crm.eu-1:prod_2')).toBe(true)
    expect(isConnectorId('x'.repeat(128))).toBe(true)
    expect(isConnectorId('x'.repeat(129))).toBe(false)
    expect(isConnectorId('')).toBe(false)
    expect(isConnectorId('a/b')).toBe(false)
    expect(isConnectorId('a b')).toBe(false)
  })
})
