/** Ids (src/domain/ids.ts): ULID layout under a prefix, sorted in creation order even within one millisecond. */
import { describe, expect, it } from 'vitest'
import { newId } from '../../src/domain/ids.js'

describe('ids', () => {
  it('lay out the millisecond in 10 base32 digits, then 16 random ones', () => {
    expect(newId('run', 0)).toMatch(/^run_0000000000[0-9a-hjkmnp-tv-z]{16}$/)
    // An independent encoding: JavaScript's base32 digits, renamed to Crockford's alphabet.
    const ms = Date.UTC(2026, 10, 23, 9, 30)
    const crockford = [...ms.toString(32).padStart(10, '0')]
      .map((d) => '0123456789abcdefghjkmnpqrstvwxyz'[Number.parseInt(d, 32)])
      .join('')
    expect(newId('req', ms).slice(4, 14)).toBe(crockford)
  })

  it('sort in creation order within one millisecond and across milliseconds, without repeating', () => {
    const at = Date.UTC(2026, 10, 23, 12)
    const ids = [
      ...Array.from({ length: 5000 }, () => newId('evt', at)),
      ...Array.from({ length: 5000 }, () => newId('evt', at + 1)),
    ]
    expect(new Set(ids).size).toBe(ids.length)
    expect([...ids].sort()).toEqual(ids)
  })
})
