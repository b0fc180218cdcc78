import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { TRACEABILITY_PATH } from '../scripts/traceability.js'
import type { Check } from '../src/check.js'
import { ALL_CHECKS } from '../src/checks/index.js'
import { STATEMENTS } from '../src/statements.js'
import { coverage, renderTraceability, sectionsOf } from '../src/traceability.js'

describe('traceability', () => {
  it('numbers statements uniquely', () => {
    expect(STATEMENTS.length).toBeGreaterThan(50)
    expect(new Set(STATEMENTS.map((s) => s.id)).size).toBe(STATEMENTS.length)
  })

  it('every check names at least one statement, and only statements that exist', () => {
    for (const c of ALL_CHECKS) expect(c.clauses.length, c.id).toBeGreaterThan(0)
    expect(coverage(ALL_CHECKS).unknown).toEqual([])
  })

  it('every statement has a check or a stated reason why none', () => {
    expect(coverage(ALL_CHECKS).unexplained).toEqual([])
  })

  it('fails when a statement loses its last check and has no reason', () => {
    const one: Check = {
      id: 'x.y',
      title: 't',
      level: 'core',
      clauses: ['S5.2', 'S99.1'],
      run: async () => {},
    }
    const cov = coverage(
      [one],
      [
        { id: 'S5.2', text: 'a' },
        { id: 'S5.3', text: 'b' },
        { id: 'S9.2', text: 'c', unchecked: 'why' },
      ],
    )
    expect(cov).toEqual({ statements: 3, covered: 1, unknown: ['S99.1'], unexplained: ['S5.3'] })
    expect(sectionsOf(one.clauses)).toEqual(['§5', '§99'])
  })

  it('check ids are unique', () => {
    expect(new Set(ALL_CHECKS.map((c) => c.id)).size).toBe(ALL_CHECKS.length)
  })

  it('traceability.md is generated from the checks (npm run traceability -w agentops-conformance)', () => {
    expect(readFileSync(TRACEABILITY_PATH, 'utf8')).toBe(renderTraceability(ALL_CHECKS))
  })
})
