/**
 * Bad request bodies derived from the OpenAPI request schemas with fast-check: a valid base body, mutated by one
 * defect (wrong type, missing required field, out of range, outside the enum, unknown field, wrong root type).
 * Every candidate is kept only when Ajv agrees it breaks the schema, so a 2xx for it is a real finding.
 */
import fc from 'fast-check'
import type { Contract } from './contract.js'

type Json = Record<string, unknown>

export interface BadBody {
  defect: string
  body: unknown
}

type JsonType = 'string' | 'integer' | 'number' | 'boolean' | 'null' | 'array' | 'object'

const SAMPLES: Record<JsonType, unknown[]> = {
  string: ['x', '', '42'],
  integer: [7, -1, 0],
  number: [1.5, -0.25],
  boolean: [true, false],
  null: [null],
  array: [[], ['x'], [1, 2]],
  object: [{}, { a: 1 }],
}

function typesOf(schema: Json | undefined): JsonType[] {
  if (!schema) return []
  const t = schema.type
  const list = (Array.isArray(t) ? t : t === undefined ? [] : [t]) as JsonType[]
  if (list.includes('integer') && !list.includes('number')) return list
  return list.includes('number') ? [...list, 'integer'] : list
}

function wrongTypeValues(schema: Json | undefined): unknown[] {
  const allowed = typesOf(schema)
  if (allowed.length === 0) return []
  return (Object.keys(SAMPLES) as JsonType[]).filter((t) => !allowed.includes(t)).flatMap((t) => SAMPLES[t])
}

function outOfRangeValues(schema: Json | undefined): Array<{ what: string; value: unknown }> {
  if (!schema) return []
  const out: Array<{ what: string; value: unknown }> = []
  if (typeof schema.maximum === 'number')
    out.push({ what: `above maximum ${schema.maximum}`, value: schema.maximum + 1 })
  if (typeof schema.minimum === 'number')
    out.push({ what: `below minimum ${schema.minimum}`, value: schema.minimum - 1 })
  if (typeof schema.maxLength === 'number' && schema.maxLength <= 20_000) {
    out.push({ what: `longer than ${schema.maxLength}`, value: 'x'.repeat(schema.maxLength + 1) })
  }
  if (typeof schema.minLength === 'number' && schema.minLength > 0)
    out.push({ what: 'empty string', value: '' })
  if (Array.isArray(schema.enum)) out.push({ what: 'outside the enum', value: 'conformance-not-a-member' })
  if (typeof schema.minItems === 'number' && schema.minItems > 0) out.push({ what: 'empty array', value: [] })
  if (schema.type === 'integer') out.push({ what: 'a fraction for an integer', value: 2.5 })
  return out
}

/** The defects one request schema allows, as fast-check arbitraries over (base body → bad body). */
export function badBodyArbitrary(
  contract: Contract,
  schemaPointer: string,
  base: Json,
): fc.Arbitrary<BadBody> {
  const schema = contract.deref(contract.at(schemaPointer)) ?? {}
  const props = Object.entries((schema.properties ?? {}) as Record<string, Json>).map(
    ([name, s]) => [name, contract.deref(s)] as const,
  )
  const required = (schema.required ?? []) as string[]
  const options: Array<fc.Arbitrary<BadBody>> = []

  options.push(
    fc
      .constantFrom<unknown>([], 'text', 42, null, true, [base])
      .map((body) => ({ defect: 'root is not an object', body })),
  )
  if (required.length > 0) {
    options.push(
      fc.constantFrom(...required).map((name) => {
        const { [name]: _dropped, ...rest } = base
        return { defect: `missing required ${name}`, body: rest }
      }),
    )
  }
  const typed = props.filter(([, s]) => wrongTypeValues(s).length > 0)
  if (typed.length > 0) {
    options.push(
      fc.constantFrom(...typed).chain(([name, s]) =>
        fc.constantFrom(...wrongTypeValues(s)).map((value) => ({
          defect: `${name} has the wrong type (${JSON.stringify(value)})`,
          body: { ...base, [name]: value },
        })),
      ),
    )
  }
  const ranged = props.filter(([, s]) => outOfRangeValues(s).length > 0)
  if (ranged.length > 0) {
    options.push(
      fc.constantFrom(...ranged).chain(([name, s]) =>
        fc.constantFrom(...outOfRangeValues(s)).map(({ what, value }) => ({
          defect: `${name} ${what}`,
          body: { ...base, [name]: value },
        })),
      ),
    )
  }
  if (schema.additionalProperties === false) {
    options.push(
      fc
        .string({ minLength: 1, maxLength: 12, unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz_') })
        .filter((k) => !props.some(([name]) => name === k))
        .map((k) => ({ defect: `unknown field ${k}`, body: { ...base, [k]: 'x' } })),
    )
  }
  return fc.oneof(...options)
}

/** `count` bad bodies for one schema, reproducible from `seed`, each confirmed invalid by Ajv. */
export function sampleBadBodies(
  contract: Contract,
  schemaPointer: string,
  base: Json,
  count: number,
  seed: number,
): BadBody[] {
  const arb = badBodyArbitrary(contract, schemaPointer, base).filter(
    (b) => contract.errors(schemaPointer, b.body).length > 0,
  )
  const seen = new Set<string>()
  const out: BadBody[] = []
  for (const b of fc.sample(arb, { seed, numRuns: count * 4 })) {
    const key = JSON.stringify(b.body)
    if (seen.has(key)) continue
    seen.add(key)
    out.push(b)
    if (out.length >= count) break
  }
  return out
}
