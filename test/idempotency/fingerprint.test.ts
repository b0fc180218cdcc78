import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { fingerprint } from '../../src/domain/idempotency/key.js'

describe('fingerprint', () => {
  it('is the same from a body already parsed as from its text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value)
        expect(fingerprint('POST', '/v1/agents', text, JSON.parse(text))).toBe(
          fingerprint('POST', '/v1/agents', text),
        )
      }),
      { seed: 47, numRuns: 300 },
    )
  })

  it('tells bodies apart by content, not by key order or spacing', () => {
    const a = fingerprint('POST', '/v1/agents', '{"name":"a","behavior":"autonomous"}')
    expect(fingerprint('POST', '/v1/agents', '{ "behavior": "autonomous", "name": "a" }')).toBe(a)
    expect(fingerprint('POST', '/v1/agents', '{"name":"b","behavior":"autonomous"}')).not.toBe(a)
    expect(fingerprint('POST', '/v1/tools', '{"name":"a","behavior":"autonomous"}')).not.toBe(a)
  })
})
