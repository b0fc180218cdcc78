/**
 * One model: every GraphQL type is a contract schema. This walks both and fails on any field, type, nullability or
 * enum difference, so a change to either side that is not made to the other breaks the build.
 */
import { readFileSync } from 'node:fs'
import {
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLInputType,
  type GraphQLOutputType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  parse as parseGraphql,
} from 'graphql'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { CONTRACT_TYPES, INTERFACE_MEMBERS } from '../../generated/graphql.js'
import { graphqlSchema } from '../../src/graphql/schema.js'
import { RELATIONS_SDL } from '../../src/graphql/sdl.js'

/** Each relation of the hand-written SDL: the generated type it extends → the fields it adds. */
const RELATIONS: Record<string, readonly string[]> = Object.fromEntries(
  parseGraphql(RELATIONS_SDL).definitions.flatMap((d) =>
    d.kind === Kind.OBJECT_TYPE_EXTENSION ? [[d.name.value, (d.fields ?? []).map((f) => f.name.value)]] : [],
  ),
)

type Json = Record<string, unknown>
const doc = parse(
  readFileSync(new URL('../../openapi/agent-operations.yaml', import.meta.url), 'utf8'),
) as Json
const schemas = (doc.components as Json).schemas as Record<string, Json>

/**
 * GraphQL type → contract schema, as the generator reports it (generated/graphql.ts). The walk below checks each
 * against the contract on its own rules, so a generator bug that gets a field wrong fails here.
 */
const GENERATED: Record<string, string> = CONTRACT_TYPES
/** Types that carry only some of their schema's properties: the subscription message (data messages only) and the
 * runs topic's events (a webhook delivery body without its `signature`). */
const SUBSETS: Record<string, string> = {
  StreamServerMessage: 'StreamServerMessage',
  ...Object.fromEntries(
    Object.values(INTERFACE_MEMBERS).flatMap((i) => Object.values(i.types).map((t) => [t, t])),
  ),
}
const OUTPUTS = Object.keys(GENERATED).filter(
  (n) => !(n in SUBSETS) && isObjectType(graphqlSchema().getType(n)),
)
const INPUTS = Object.keys(GENERATED).filter((n) => isInputObjectType(graphqlSchema().getType(n)))
const CONTRACT_NAME: Record<string, string> = { ...GENERATED, ...SUBSETS }

/** A comparable description of one field's type. */
type Shape =
  | { kind: 'string' | 'integer' | 'number' | 'boolean' | 'json'; enum?: string[]; nullable: boolean }
  | { kind: 'object'; name: string; nullable: boolean }
  | { kind: 'list'; items: Shape; nullable: boolean }

const refName = (ref: string) => ref.replace('#/components/schemas/', '')

/** The shape of a contract property schema; `required` says whether the property must be present. */
function contractShape(schema: Json, required: boolean): Shape {
  let nullable = !required
  let s = schema
  if (Array.isArray(s.oneOf)) {
    const variants = s.oneOf as Json[]
    const real = variants.filter((v) => v.type !== 'null')
    if (real.length !== variants.length) nullable = true
    expect(real, `oneOf with one non-null variant: ${JSON.stringify(s)}`).toHaveLength(1)
    s = real[0] as Json
  }
  // A named schema that refines another (`allOf: [ref]` with a default) is that schema.
  if (Array.isArray(s.allOf) && s.allOf.length === 1) s = { ...s, ...(s.allOf[0] as Json), allOf: undefined }
  // An open value set (`anyOf: [Known… enum, string]`) is a plain string: any value may come back.
  if (Array.isArray(s.anyOf)) {
    const variants = s.anyOf as Json[]
    expect(
      variants.every((v) => typeof v.$ref === 'string' || v.type === 'string'),
      `anyOf of a known enum and a string: ${JSON.stringify(s)}`,
    ).toBe(true)
    return { kind: 'string', nullable }
  }
  if (typeof s.$ref === 'string') {
    const name = refName(s.$ref)
    const target = schemas[name] as Json
    if (target.type === 'object' && target.properties) return { kind: 'object', name, nullable }
    return { ...contractShape(target, true), nullable }
  }
  let type = s.type
  if (Array.isArray(type)) {
    const types = type as unknown[]
    if (types.includes('null')) nullable = true
    const real = types.filter((t) => t !== 'null')
    expect(real, `one JSON type: ${JSON.stringify(s)}`).toHaveLength(1)
    type = real[0]
  }
  if (type === undefined && s.const !== undefined) type = 'string'
  // No type at all: any JSON value, null included.
  if (type === undefined) return { kind: 'json', nullable: true }
  if (type === 'array') return { kind: 'list', items: contractShape(s.items as Json, true), nullable }
  if (type === 'object') {
    expect(
      s.properties,
      'a contract object with properties maps to a named type, not an inline one',
    ).toBeUndefined()
    return { kind: 'json', nullable }
  }
  const values = Array.isArray(s.enum)
    ? (s.enum as unknown[]).filter((v) => v !== null).map(String)
    : undefined
  return { kind: type as 'string', ...(values ? { enum: values } : {}), nullable }
}

/** The shape of a GraphQL field type; `description` is the field's, for the enum-as-String rule. */
function graphqlShape(type: GraphQLOutputType | GraphQLInputType): Shape {
  const nullable = !isNonNullType(type)
  const t = isNonNullType(type) ? type.ofType : type
  if (isListType(t)) return { kind: 'list', items: graphqlShape(t.ofType), nullable }
  if (isEnumType(t)) return { kind: 'string', enum: t.getValues().map((v) => v.value as string), nullable }
  if (isObjectType(t) || isInputObjectType(t)) {
    const name = CONTRACT_NAME[t.name]
    expect(name, `GraphQL type ${t.name} is mapped to a contract schema`).toBeDefined()
    return { kind: 'object', name: name as string, nullable }
  }
  if (isScalarType(t)) {
    const kinds: Record<string, Shape['kind']> = {
      String: 'string',
      ID: 'string',
      Int: 'integer',
      Float: 'number',
      Boolean: 'boolean',
      JSON: 'json',
    }
    return { kind: kinds[t.name] as 'string', nullable }
  }
  throw new Error(`unexpected GraphQL type ${String(t)}`)
}

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/

/**
 * Compares one field. A contract enum whose values cannot be GraphQL enum names (`run.started`) is a String in
 * GraphQL whose description lists every value; any other enum must be a GraphQL enum with exactly the same values.
 */
function compare(where: string, contract: Shape, graphql: Shape, description: string, subset = false): void {
  expect(graphql.kind, `${where}: type`).toBe(contract.kind)
  expect(graphql.nullable, `${where}: nullability`).toBe(contract.nullable)
  if (contract.kind === 'list' && graphql.kind === 'list') {
    compare(`${where}[]`, contract.items, graphql.items, description, subset)
    return
  }
  if (contract.kind === 'object' && graphql.kind === 'object') {
    expect(graphql.name, `${where}: object type`).toBe(contract.name)
    return
  }
  const cEnum = 'enum' in contract ? contract.enum : undefined
  const gEnum = 'enum' in graphql ? graphql.enum : undefined
  if (!cEnum) {
    expect(gEnum, `${where}: no enum in the contract`).toBeUndefined()
    return
  }
  if (gEnum && subset) {
    for (const v of gEnum) expect(cEnum, `${where}: enum value ${v} is the contract's`).toContain(v)
    return
  }
  if (gEnum) {
    expect([...gEnum].sort(), `${where}: enum values`).toEqual([...cEnum].sort())
    return
  }
  expect(
    cEnum.some((v) => !GRAPHQL_NAME.test(v)),
    `${where}: an enum must be a GraphQL enum`,
  ).toBe(true)
  for (const v of cEnum) expect(description, `${where}: description lists ${v}`).toContain(v)
}

function fieldsOf(name: string): Record<string, GraphQLField<unknown, unknown> | GraphQLInputField> {
  const type = graphqlSchema().getType(name)
  if (!isObjectType(type) && !isInputObjectType(type)) throw new Error(`${name} is not an object type`)
  return type.getFields()
}

function check(graphqlName: string, subset = false): void {
  const contractName = CONTRACT_NAME[graphqlName] as string
  const schema = schemas[contractName] as Json
  const props = schema.properties as Record<string, Json>
  const required = new Set((schema.required as string[] | undefined) ?? [])
  const relations = new Set(RELATIONS[graphqlName] ?? [])
  const fields = Object.fromEntries(Object.entries(fieldsOf(graphqlName)).filter(([n]) => !relations.has(n)))
  if (subset) {
    for (const n of Object.keys(fields))
      expect(Object.keys(props), `${graphqlName}.${n} is in the contract`).toContain(n)
  } else {
    expect(Object.keys(fields).sort(), `${graphqlName} fields = ${contractName} properties`).toEqual(
      Object.keys(props).sort(),
    )
  }
  for (const [n, field] of Object.entries(fields)) {
    const contract = contractShape(props[n] as Json, required.has(n))
    compare(`${graphqlName}.${n}`, contract, graphqlShape(field.type), field.description ?? '', subset)
  }
}

describe('every GraphQL type is its contract schema', () => {
  it.each(OUTPUTS)('%s', (name) => check(name))
  it.each(INPUTS)('input %s', (name) => check(name))
  it.each(Object.keys(SUBSETS))('%s (data messages only)', (name) => check(name, true))

  it('maps every object and input type of the schema (no unchecked type)', () => {
    const named = Object.values(graphqlSchema().getTypeMap()).filter(
      (t) => (isObjectType(t) || isInputObjectType(t)) && !t.name.startsWith('__'),
    )
    const roots = new Set(['Query', 'Mutation', 'Subscription'])
    const unmapped = named.map((t) => t.name).filter((n) => !roots.has(n) && !(n in CONTRACT_NAME))
    expect(unmapped).toEqual([])
  })

  it('relations are the only extra fields and each names a mapped type', () => {
    for (const [type, names] of Object.entries(RELATIONS)) {
      const fields = fieldsOf(type)
      for (const n of names) {
        expect(fields[n], `${type}.${n}`).toBeDefined()
        const target = String(fields[n]?.type).replace(/[[\]!]/g, '')
        const known = target in CONTRACT_NAME || isInterfaceType(graphqlSchema().getType(target))
        expect(known, `${type}.${n}: ${target} is a contract type`).toBe(true)
      }
    }
  })

  it('the walk itself fails on a difference (a nullability, an enum value, a missing field)', () => {
    const run = schemas.Run as Json
    const original = structuredClone(run)
    try {
      ;(run.required as string[]).splice((run.required as string[]).indexOf('policy_envelope'), 1)
      expect(() => check('Run')).toThrow(/nullability/)
      Object.assign(run, structuredClone(original))
      ;(schemas.RunStatus as Json).enum = [...((schemas.RunStatus as Json).enum as string[]), 'archived']
      expect(() => check('Run')).toThrow(/enum values/)
      ;((schemas.RunStatus as Json).enum as string[]).pop()
      ;(run.properties as Json).archived_at = { type: 'string' }
      expect(() => check('Run')).toThrow(/fields/)
    } finally {
      for (const k of Object.keys(run)) delete run[k]
      Object.assign(run, original)
    }
  })
})
