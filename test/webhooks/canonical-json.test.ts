import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalize } from '../../client/src/canonical-json.js'

/** IEEE 754 bit patterns and their RFC 8785 serialisations, from RFC 8785 Appendix B. */
const RFC8785_NUMBERS: [string, string][] = [
  ['0000000000000000', '0'],
  ['8000000000000000', '0'],
  ['0000000000000001', '5e-324'],
  ['8000000000000001', '-5e-324'],
  ['7fefffffffffffff', '1.7976931348623157e+308'],
  ['ffefffffffffffff', '-1.7976931348623157e+308'],
  ['4340000000000000', '9007199254740992'],
  ['c340000000000000', '-9007199254740992'],
  ['4430000000000000', '295147905179352830000'],
  ['44b52d02c7e14af5', '9.999999999999997e+22'],
  ['44b52d02c7e14af6', '1e+23'],
  ['44b52d02c7e14af7', '1.0000000000000001e+23'],
  ['444b1ae4d6e2ef4e', '999999999999999700000'],
  ['444b1ae4d6e2ef4f', '999999999999999900000'],
  ['444b1ae4d6e2ef50', '1e+21'],
  ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
  ['3eb0c6f7a0b5ed8d', '0.000001'],
  ['41b3de4355555553', '333333333.3333332'],
  ['41b3de4355555554', '333333333.33333325'],
  ['41b3de4355555555', '333333333.3333333'],
  ['41b3de4355555556', '333333333.3333334'],
  ['41b3de4355555557', '333333333.33333343'],
  ['becbf647612f3696', '-0.0000033333333333333333'],
  ['43143ff3c1cb0959', '1424953923781206.2'],
]

function fromBits(hex: string): number {
  return Buffer.from(hex, 'hex').readDoubleBE(0)
}

describe('canonicalize (RFC 8785)', () => {
  it.each(RFC8785_NUMBERS)('formats the double 0x%s as %s', (bits, expected) => {
    expect(canonicalize(fromBits(bits))).toBe(expected)
  })

  it('refuses NaN and the infinities (RFC 8785 Appendix B)', () => {
    expect(() => canonicalize(fromBits('7fffffffffffffff'))).toThrow(TypeError)
    expect(() => canonicalize(fromBits('7ff0000000000000'))).toThrow(TypeError)
    expect(() => canonicalize({ a: Number.NEGATIVE_INFINITY })).toThrow(TypeError)
  })

  it('reproduces the §3.2.2 example byte for byte', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    )
    expect(canonicalize(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    )
  })

  it('sorts keys by UTF-16 code units, as in the §3.2.3 example', () => {
    const input = JSON.parse(
      '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet With Dagesh",' +
        ' "1": "One", "\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080": "Control",' +
        ' "\\u00f6": "Latin Small Letter O With Diaeresis"}',
    )
    const values = Object.values(JSON.parse(canonicalize(input)) as Record<string, string>)
    // Object.values would reorder integer-like keys, so read the order from the text itself.
    const order = [...canonicalize(input).matchAll(/:"([^"]+)"/g)].map((m) => m[1])
    expect(order).toEqual([
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ])
    expect(values).toHaveLength(7)
  })

  it('sorts a supplementary-plane key before U+FB33 (code units, not code points)', () => {
    expect(canonicalize({ '\ufb33': 1, '\u{1F600}': 2 })).toBe('{"\u{1F600}":2,"\ufb33":1}')
  })

  it('emits no whitespace and sorts nested objects, keeping array order', () => {
    expect(canonicalize({ b: [3, { z: 1, a: 2 }], a: { y: null, x: 'é' } })).toBe(
      '{"a":{"x":"é","y":null},"b":[3,{"a":2,"z":1}]}',
    )
  })

  it('escapes control characters with lower-case hex and leaves other characters as they are', () => {
    expect(canonicalize('\u0001\b\t\n\f\r"\\\u001f\u007f€')).toBe(
      '"\\u0001\\b\\t\\n\\f\\r\\"\\\\\\u001f\u007f€"',
    )
  })

  it('is stable under parse/serialise round trips and key permutations', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const once = canonicalize(value)
        expect(canonicalize(JSON.parse(once))).toBe(once)
        expect(JSON.parse(once)).toEqual(JSON.parse(JSON.stringify(value)))
      }),
      { numRuns: 300 },
    )
  })
})
