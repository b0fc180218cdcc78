import { describe, expect, it } from 'vitest'
import { ALL_CHECKS } from '../src/checks/index.js'
import { PROFILE_GAPS } from '../src/gaps.js'
import { STATEMENTS } from '../src/statements.js'

describe('profile checks in two groups', () => {
  const profile = ALL_CHECKS.filter((c) => c.level === 'profile')

  it('every gap named belongs to a profile check, and quotes the spec (§)', () => {
    const ids = new Set(profile.map((c) => c.id))
    for (const [id, gap] of Object.entries(PROFILE_GAPS)) {
      expect(ids.has(id), `${id} is no profile check`).toBe(true)
      expect(gap).toMatch(/^§\d/)
    }
  })

  it('a profile check named by no gap checks a spec sentence its clauses quote', () => {
    const known = new Set(STATEMENTS.map((s) => s.id))
    const sentences = profile.filter((c) => !PROFILE_GAPS[c.id])
    for (const c of sentences) {
      expect(c.clauses.length, c.id).toBeGreaterThan(0)
      for (const clause of c.clauses) expect(known.has(clause), `${c.id}: ${clause}`).toBe(true)
    }
    // Most profile checks fill a gap; the sentence group stays the short list that matters.
    expect(sentences.length).toBeLessThan(profile.length / 3)
  })
})
