import { describe, expect, it } from 'vitest'
import { ALL_CHECKS } from '../src/checks/index.js'
import { coverage, loadTraceability, parseTraceability } from '../src/traceability.js'

describe('traceability', () => {
  const statements = loadTraceability()
  const ids = new Set(ALL_CHECKS.map((c) => c.id))

  it('numbers statements uniquely and names only checks that exist', () => {
    expect(statements.length).toBeGreaterThan(50)
    expect(new Set(statements.map((s) => s.id)).size).toBe(statements.length)
    expect(coverage(statements, ids).unknown).toEqual([])
  })

  it('maps every check to at least one statement', () => {
    const mapped = new Set(statements.flatMap((s) => s.checks))
    expect(ALL_CHECKS.map((c) => c.id).filter((id) => !mapped.has(id))).toEqual([])
  })

  it('check ids are unique and every check names a spec section', () => {
    expect(ids.size).toBe(ALL_CHECKS.length)
    for (const c of ALL_CHECKS) expect(c.sections.length, c.id).toBeGreaterThan(0)
  })

  it('counts a statement as covered only when one of its checks exists', () => {
    const parsed = parseTraceability(
      '| S1.1 | a | `auth.missing-token-401` |\n| S1.2 | b | `no.such-check` |\n| S1.3 | c | — |',
    )
    expect(coverage(parsed, ids)).toEqual({ statements: 3, covered: 1, unknown: ['no.such-check'] })
  })
})
