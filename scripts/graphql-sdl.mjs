/**
 * The GraphQL object types, input types, enums and interfaces of the contract's `components.schemas`, as SDL
 * (generated/graphql.ts). Only relations and the root types (Query, Mutation, Subscription) are written by hand
 * (src/graphql/sdl.ts). The rules, so that a contract schema has one GraphQL form:
 * - a property keeps its name; it is non-null when required and not nullable (`type: [x, 'null']`, `oneOf [x, null]`);
 * - an object schema with properties is the object type of the same name; inside an input type it is an input type,
 *   named `<Name>Input` when the same schema is also an output type;
 * - an object without properties (free-form) is `JSON`, and a value of no type nullable `JSON`; an open value set
 *   (`anyOf [Known… enum, string]`) is `String`;
 * - an enum whose values are GraphQL names is a GraphQL enum: a named schema keeps its name, an inline one takes its
 *   `title`, else the name of a named enum schema with the same values, else `<Schema><Property>`; an enum with
 *   other values (`run.started`) is a `String` whose description lists them;
 * - a string `<resource>_id` inside a resource schema (one with its own `<resource>_id`: Run, Agent, Task, …) is `ID`.
 */

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/
const refName = (ref) => ref.replace('#/components/schemas/', '')
const pascal = (s) =>
  s
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')
const snake = (name) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase()
const isObjectSchema = (s) => s?.type === 'object' && s.properties !== undefined
const graphqlEnum = (values) => values.every((v) => typeof v === 'string' && GRAPHQL_NAME.test(v))

function block(text, indent = '') {
  if (!text) return ''
  const clean = String(text).trim().replace(/"""/g, '\\"""')
  return `${indent}"""\n${clean
    .split('\n')
    .map((l) => indent + l)
    .join('\n')}\n${indent}"""\n`
}

/**
 * @param contract the parsed OpenAPI document
 * @param surface  which schemas GraphQL exposes: `outputs` and `inputs` (object schemas; what they reference follows),
 *                 `interfaces` ({ Name: { members, discriminator, omit, description } }: an interface of the fields
 *                 every member shares, implemented by the member schemas, told apart by the discriminating property)
 * @returns the SDL, per interface the discriminator value → member type name, and each object type's schema
 */
export function graphqlTypes(contract, surface) {
  const schemas = contract.components.schemas
  const resources = new Set(
    Object.entries(schemas)
      .filter(([name, s]) => isObjectSchema(s) && s.properties[`${snake(name)}_id`] !== undefined)
      .map(([name]) => snake(name)),
  )
  const namedEnums = new Map(
    Object.entries(schemas)
      .filter(([, s]) => Array.isArray(s.enum) && graphqlEnum(s.enum))
      .map(([name, s]) => [JSON.stringify(s.enum), name]),
  )
  /** GraphQL enum name → { values, description } */
  const enums = new Map()
  /** GraphQL object/input name → { schema, input, omit } in the order they are first reached. */
  const objects = new Map()

  function enumType(name, values, description) {
    const known = enums.get(name)
    if (known && JSON.stringify(known.values) !== JSON.stringify(values)) {
      throw new Error(`GraphQL enum ${name} would have two value sets: ${known.values} and ${values}`)
    }
    if (!known) enums.set(name, { values, description })
    return name
  }

  function objectType(schemaName, input, omit = []) {
    const name = input && objects.get(schemaName)?.input === false ? `${schemaName}Input` : schemaName
    if (!objects.has(name)) {
      objects.set(name, { schemaName, input, omit })
      // Reach the referenced types now, so every type is emitted whatever the order of the walk.
      fieldsOf(name)
    }
    return name
  }

  /** The GraphQL type of one property and the description it carries. */
  function fieldType(owner, prop, schema, required, input) {
    let nullable = !required
    let s = schema
    let description = schema.description
    if (Array.isArray(s.oneOf)) {
      const real = s.oneOf.filter((v) => v.type !== 'null')
      if (real.length !== s.oneOf.length) nullable = true
      if (real.length !== 1) throw new Error(`${owner}.${prop}: a oneOf needs one non-null variant`)
      s = real[0]
    }
    if (Array.isArray(s.allOf) && s.allOf.length === 1) s = { ...s, ...s.allOf[0], allOf: undefined }
    const wrap = (t) => ({ type: nullable ? t : `${t}!`, description })
    if (Array.isArray(s.anyOf)) return wrap('String')
    if (typeof s.$ref === 'string') {
      const name = refName(s.$ref)
      const target = schemas[name]
      if (isObjectSchema(target)) return wrap(objectType(name, input))
      if (Array.isArray(target.enum) && graphqlEnum(target.enum)) {
        return wrap(enumType(name, target.enum, target.description))
      }
      const inner = fieldType(
        owner,
        prop,
        { ...target, description: description ?? target.description },
        true,
        input,
      )
      return { type: nullable ? inner.type.replace(/!$/, '') : inner.type, description: inner.description }
    }
    let type = s.type
    if (Array.isArray(type)) {
      if (type.includes('null')) nullable = true
      const real = type.filter((t) => t !== 'null')
      if (real.length !== 1) throw new Error(`${owner}.${prop}: one JSON type`)
      type = real[0]
    }
    if (type === undefined && s.const !== undefined) {
      type = 'string'
      description = description ?? `Always ${s.const}.`
    }
    if (type === 'array') {
      const item = fieldType(owner, prop, s.items, true, input)
      return {
        type: nullable ? `[${item.type}]` : `[${item.type}]!`,
        description: description ?? item.description,
      }
    }
    // A value of no type may be any JSON value, null included.
    if (type === undefined) return { type: 'JSON', description }
    if (type === 'object') {
      if (s.properties) throw new Error(`${owner}.${prop}: an object with properties must be a named schema`)
      return wrap('JSON')
    }
    if (Array.isArray(s.enum)) {
      const values = s.enum.filter((v) => v !== null)
      if (graphqlEnum(values)) {
        const name = s.title ?? namedEnums.get(JSON.stringify(values)) ?? `${owner}${pascal(prop)}`
        return wrap(enumType(name, values))
      }
      const listed = `One of: ${values.join(', ')}.`
      description = description ? `${description}\n\n${listed}` : listed
      return wrap('String')
    }
    if (type === 'integer') return wrap('Int')
    if (type === 'number') return wrap('Float')
    if (type === 'boolean') return wrap('Boolean')
    if (type !== 'string') throw new Error(`${owner}.${prop}: unexpected type ${type}`)
    const id = resources.has(snake(owner)) && prop.endsWith('_id') && resources.has(prop.slice(0, -3))
    return wrap(id ? 'ID' : 'String')
  }

  const fieldCache = new Map()
  function fieldsOf(name) {
    const cached = fieldCache.get(name)
    if (cached) return cached
    const { schemaName, input, omit } = objects.get(name)
    const schema = schemas[schemaName]
    const required = new Set(schema.required ?? [])
    const fields = []
    fieldCache.set(name, fields)
    for (const [prop, propSchema] of Object.entries(schema.properties)) {
      if (omit.includes(prop)) continue
      let { type, description } = fieldType(schemaName, prop, propSchema, required.has(prop), input)
      // An array item's list wording: "Each one of" for a list of strings with listed values.
      if (type.startsWith('[') && description)
        description = description.replace(/^One of: /m, 'Each one of: ')
      fields.push({ prop, type, description })
    }
    return fields
  }

  for (const name of surface.outputs) objectType(name, false)
  const interfaceSdl = []
  const implementsOf = new Map()
  const discriminators = {}
  for (const [name, spec] of Object.entries(surface.interfaces ?? {})) {
    const members = spec.members.map((m) => objectType(m, false, spec.omit))
    const byValue = {}
    for (const member of spec.members) {
      const d = schemas[member].properties[spec.discriminator]
      for (const value of d.const !== undefined ? [d.const] : d.enum) byValue[value] = member
      implementsOf.set(member, name)
    }
    discriminators[name] = { field: spec.discriminator, types: byValue }
    // The interface's fields: those every member has with the same type.
    const [first, ...rest] = members.map((m) => fieldsOf(m))
    const common = first.filter((f) =>
      rest.every((fs) => fs.some((g) => g.prop === f.prop && g.type === f.type)),
    )
    const described = (f) =>
      f.prop === spec.discriminator ? `One of: ${Object.keys(byValue).join(', ')}.` : f.description
    const fields = common.map((f) => `${block(described(f), '  ')}  ${f.prop}: ${f.type}\n`).join('')
    interfaceSdl.push(`${block(spec.description)}interface ${name} {\n${fields}}\n`)
  }
  for (const name of surface.inputs) objectType(name, true)

  const enumSdl = [...enums].map(
    ([name, { values, description }]) =>
      `${block(description)}enum ${name} {\n${values.map((v) => `  ${v}\n`).join('')}}\n`,
  )
  const objectSdl = [...objects].map(([name, { schemaName, input }]) => {
    const fields = fieldsOf(name)
      .map((f) => `${block(f.description, '  ')}  ${f.prop}: ${f.type}\n`)
      .join('')
    const implemented = implementsOf.has(name) ? ` implements ${implementsOf.get(name)}` : ''
    return `${block(schemas[schemaName].description)}${input ? 'input' : 'type'} ${name}${implemented} {\n${fields}}\n`
  })
  const json = `${block("Any JSON value: the contract's free-form objects (inputs, schemas, config, detail, record bodies).")}scalar JSON\n`
  const sdl = [json, ...enumSdl, ...interfaceSdl, ...objectSdl].join('\n')
  return {
    sdl,
    discriminators,
    graphqlNames: Object.fromEntries([...objects].map(([n, o]) => [n, o.schemaName])),
  }
}
