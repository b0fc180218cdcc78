import {
  buildSchema,
  GraphQLError,
  GraphQLScalarType,
  type GraphQLSchema,
  isInterfaceType,
  isObjectType,
  Kind,
  printSchema,
  type ValueNode,
} from 'graphql'
import { CONTRACT_SDL, INTERFACE_MEMBERS } from '../../generated/graphql.js'
import { inexactNumberMessage, isInexactNumber } from '../domain/json-numbers.js'
import type { GraphqlContext } from './context.js'
import { introspectionBounds } from './limits.js'
import { resolvers, subscriptions } from './resolvers.js'
import { SDL } from './sdl.js'

function literal(node: ValueNode, variables: Record<string, unknown> | null | undefined): unknown {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return node.value
    case Kind.INT:
    case Kind.FLOAT:
      // A number the service would keep other than as written (src/domain/json-numbers.ts) is refused, as in JSON;
      // graphql-js reports it at the literal (ValuesOfCorrectTypeRule) with this message.
      if (isInexactNumber(node.value)) throw new GraphQLError(inexactNumberMessage(node.value))
      return Number(node.value)
    case Kind.NULL:
      return null
    case Kind.LIST:
      return node.values.map((v) => literal(v, variables))
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, literal(f.value, variables)]))
    case Kind.VARIABLE:
      return variables?.[node.name.value]
    default:
      return undefined
  }
}

const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: literal,
})

let built: GraphQLSchema | undefined

/** An interface's member for a value: the one its discriminating field names (the contract's `const` or `enum`). */
function attachInterfaces(schema: GraphQLSchema): void {
  for (const [name, { field, types }] of Object.entries(INTERFACE_MEMBERS)) {
    const type = schema.getType(name)
    if (!isInterfaceType(type)) throw new Error(`generated interface ${name} is missing`)
    const members: Readonly<Record<string, string>> = types
    type.resolveType = (value) => {
      // A value without the field (or with a kind no member has) names no member: graphql-js refuses it.
      return members[String((value as Record<string, unknown>)[field])]
    }
  }
}

/**
 * The executable schema: the contract's generated types with the hand-written relations and roots, the JSON scalar,
 * interface resolution, resolvers and subscription sources attached.
 */
export function graphqlSchema(): GraphQLSchema {
  if (built) return built
  const schema = buildSchema(CONTRACT_SDL + SDL)
  attachInterfaces(schema)
  const json = schema.getType('JSON') as GraphQLScalarType
  // Stryker disable next-line ObjectLiteral: equivalent: graphql-js's default for a custom scalar is the identity for serialize and parseValue and valueFromASTUntyped (the same values, variables included) for literals.
  Object.assign(json, {
    serialize: JSONScalar.serialize,
    parseValue: JSONScalar.parseValue,
    parseLiteral: JSONScalar.parseLiteral,
  })
  for (const [typeName, fields] of Object.entries(resolvers)) {
    const type = schema.getType(typeName)
    if (!isObjectType(type)) throw new Error(`resolvers name unknown type ${typeName}`)
    for (const [name, resolve] of Object.entries(fields)) {
      const field = type.getFields()[name]
      if (!field) throw new Error(`resolvers name unknown field ${typeName}.${name}`)
      field.resolve = (parent, args, ctx) =>
        resolve(parent as Record<string, unknown>, args, ctx as GraphqlContext)
    }
  }
  const subscription = schema.getSubscriptionType()
  for (const [name, subscribe] of Object.entries(subscriptions)) {
    // Stryker disable next-line OptionalChaining: the SDL always declares a Subscription type: equivalent.
    const field = subscription?.getFields()[name]
    if (!field) throw new Error(`subscriptions name unknown field ${name}`)
    field.subscribe = (parent, args, ctx) => subscribe(parent, args, ctx as GraphqlContext)
    field.resolve = (message) => message
  }
  introspectionBounds(schema)
  built = schema
  return schema
}

/** The SDL as printed to openapi/agent-operations.graphql. */
export function printedSchema(): string {
  return `${printSchema(graphqlSchema())}\n`
}
