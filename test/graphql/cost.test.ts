/**
 * The cost limit covers introspection and every field that returns a list (src/graphql/limits.ts): alias floods
 * of `__schema`, `__type` or a list field are refused before anything runs, while one full introspection query
 * (what GraphiQL and code generators send) still passes. Before, `__`-fields were not counted at all: 400 aliases
 * of an introspection field were answered with 2 MB.
 */
import { getIntrospectionQuery } from 'graphql'
import { describe, expect, it } from 'vitest'
import { MAX_COST } from '../../src/graphql/limits.js'
import { prepare } from '../../src/graphql/prepare.js'

/** `n` aliases of one selection; the documents stay under the parser's 5,000-token limit. */
const aliases = (n: number, selection: string, tail = '') =>
  `query${selection.includes('$id') ? '($id: ID!)' : ''} { ${Array.from({ length: n }, (_, i) => `a${i}: ${selection}`).join(' ')} } ${tail}`

function costOf(query: string): { ok: true } | { ok: false; detail: unknown } {
  const prepared = prepare(query, undefined, { id: 'run_x' })
  if (prepared.ok) return { ok: true }
  const detail = prepared.errors.map((e) => e.extensions?.detail ?? e.message)
  return { ok: false, detail: detail.length === 1 ? detail[0] : detail }
}

describe('GraphQL cost', () => {
  it('lets one full introspection query through', () => {
    expect(costOf(getIntrospectionQuery())).toEqual({ ok: true })
  })

  it('refuses 400 aliases of __schema: each costs 1 + every type of the schema', () => {
    const refused = costOf(aliases(400, '__schema { types { name } }'))
    expect(refused).toMatchObject({ ok: false, detail: { limit: 'cost', max: MAX_COST } })
    const { observed } = (refused as { detail: { observed: number } }).detail
    expect(observed % 400).toBe(0)
    expect(observed / 400).toBeGreaterThan(50)
    expect(costOf(aliases(10, '__schema { types { name } }'))).toEqual({ ok: true })
  })

  it('refuses 400 aliases of __type with its fields', () => {
    const flood = aliases(
      400,
      '__type(name: "Run") { ...T }',
      'fragment T on __Type { fields { name type { name } } }',
    )
    expect(costOf(flood)).toMatchObject({ ok: false, detail: { limit: 'cost' } })
  })

  it('a type reference repeats types: a fields list under it is costed per parent, not capped by the schema', () => {
    // Every field's type, then that type's fields: up to (fields of the schema) x (most fields of a type), about
    // 4,400 objects; capped by the schema's total it would seem to cost 800, and three of them would pass.
    const q = aliases(3, '__schema { types { fields { type { fields { name } } } } }')
    expect(costOf(q)).toMatchObject({ ok: false, detail: { limit: 'cost' } })
  })

  it('refuses an alias flood of a list field that takes no limit', () => {
    // run.awaiting holds at most one entry per plan step (25 in the largest envelope): each alias costs 25.
    const awaiting = Array.from({ length: 10 }, (_, i) => `w${i}: awaiting { step_id }`).join(' ')
    const flood = (n: number) => aliases(n, 'run(id: $id) { ...W }', `fragment W on Run { ${awaiting} }`)
    expect(costOf(flood(40))).toMatchObject({
      ok: false,
      detail: { limit: 'cost', observed: 40 * (1 + 10 * 25) },
    })
    expect(costOf(flood(39))).toEqual({ ok: true })
  })

  it("a page's data is counted once, by its page field's limit", () => {
    expect(costOf('{ agents(limit: 200) { data { runs(limit: 200) { data { run_id } } } } }')).toMatchObject({
      detail: { observed: 80_400 },
    })
  })
})
