import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLSchema,
  type GraphQLType,
  getNamedType,
  getNullableType,
  isAbstractType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  SchemaMetaFieldDef,
  type SelectionSetNode,
  TypeMetaFieldDef,
  type ValueNode,
} from 'graphql'
import { MAX_BATCH_RECORDS } from '../domain/ingestion/service.js'
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../domain/pagination.js'
import { ENVELOPES } from '../domain/policy/envelopes.js'
import { documentError } from './errors.js'

export const MAX_DEPTH = 12
export const MAX_COST = 10_000

/** The most steps any policy envelope allows a run: what bounds a run's results and awaiting approvals. */
const MAX_PLAN_STEPS = Math.max(...Object.values(ENVELOPES).map((e) => e.max_steps))

/**
 * How many items an object list without a `limit` argument may hold, where the domain bounds it. A page's `data`
 * is not here: its page field's limit already multiplied it. A list field not named here (a future one) is
 * costed like a default page.
 */
const LIST_BOUNDS: Readonly<Record<string, number>> = {
  'RunOutcome.results': MAX_PLAN_STEPS,
  'Run.awaiting': MAX_PLAN_STEPS,
  'IngestResponse.rejections': MAX_BATCH_RECORDS,
}

/**
 * Depth and cost limits, checked before anything executes. Cost counts every object a response may hold: a
 * page field (one taking `limit`) multiplies its selection by its limit (default 50, at most 200), so
 * `agents(limit: 200) { runs(limit: 200) { ... } }` costs 40,000 and is refused before a single query runs;
 * any other field returning a list multiplies its selection by the most items it may hold (LIST_BOUNDS).
 * Introspection counts like any selection, at the exact bounds of this schema (introspectionCost): one full
 * introspection query (GraphiQL's) costs about 3,000, and a flood of aliased `__schema` or `__type` fields
 * is refused like any other costly query.
 */
export function checkLimits(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): GraphQLError[] {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def)
  }
  const root =
    operation.operation === 'query'
      ? schema.getQueryType()
      : // Stryker disable next-line ConditionalExpression: `true` costs a subscription against the Mutation type (0), equivalent: no subscription selection reaches either limit (its messages hold no page and nest 5 deep at most); the mutator goes whole, its `false` with it, while EqualityOperator's and StringLiteral's variants stay judged (graphql.document-limits, a costly mutation).
        operation.operation === 'mutation'
        ? schema.getMutationType()
        : schema.getSubscriptionType()
  if (!root) return []
  const introspection = introspectionBounds(schema)
  let maxDepth = 0
  /** Every field selected in `set` on `type`, fragments resolved (a fragment spread inside itself is skipped). */
  const fieldsOf = (set: SelectionSetNode, seen: ReadonlySet<string>, out: FieldNode[] = []): FieldNode[] => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) out.push(sel)
      else if (sel.kind === Kind.INLINE_FRAGMENT) fieldsOf(sel.selectionSet, seen, out)
      else {
        const name = sel.name.value
        const frag = fragments.get(name)
        // A fragment spread inside itself is refused by validation (NoFragmentCycles); guard anyway.
        // Stryker disable next-line LogicalOperator,ArrayDeclaration: equivalent once validation has run (NoFragmentCycles, KnownFragmentNames): a spread always names a fragment and never one inside itself.
        if (frag && !seen.has(name)) fieldsOf(frag.selectionSet, new Set([...seen, name]), out)
      }
    }
    return out
  }
  /**
   * Introspection objects under `count` parents of `type`. `distinct`: the parents are different objects of the
   * schema (every type, every field of them), so a list under them holds at most the schema's total of its items;
   * under a type reference (`type`, `ofType`) the same type may repeat, and only the per-parent bound holds.
   * Depth is not counted here: a type reference's `ofType` chain is as deep as GraphiQL's query asks (it stops
   * where the schema's wrappers stop), and the cost bounds the answer anyway.
   */
  const introspect = (set: SelectionSetNode, type: GraphQLType, count: number, distinct: boolean): number => {
    const named = getNamedType(type)
    if (!isObjectType(named)) return 0
    let cost = 0
    for (const sel of fieldsOf(set, new Set())) {
      const field = named.getFields()[sel.name.value]
      if (!field || !sel.selectionSet) continue
      const list = isListType(getNullableType(field.type))
      const bound = introspection.get(`${named.name}.${field.name}`) ?? introspection.get('*') ?? FALLBACK
      const children = list
        ? distinct
          ? Math.min(count * bound.per, bound.total)
          : count * bound.per
        : count
      cost += children + introspect(sel.selectionSet, field.type, children, distinct && list)
    }
    return cost
  }
  const walk = (set: SelectionSetNode, type: GraphQLType, depth: number): number => {
    const named = getNamedType(type)
    if (!isObjectType(named)) return 0
    maxDepth = Math.max(maxDepth, depth)
    let cost = 0
    for (const sel of fieldsOf(set, new Set())) {
      const name = sel.name.value
      if (!sel.selectionSet) continue
      if (name === '__schema' || name === '__type') {
        const meta = name === '__schema' ? SchemaMetaFieldDef : TypeMetaFieldDef
        cost += 1 + introspect(sel.selectionSet, meta.type, 1, true)
        continue
      }
      const field = named.getFields()[name]
      // Stryker disable next-line ConditionalExpression: unreachable: validation refuses unknown fields, and __typename (no selection set) is skipped above.
      if (!field) continue
      const limitArg = field.args.find((a) => a.name === 'limit')
      const each = 1 + walk(sel.selectionSet, field.type, depth + 1)
      const times = limitArg
        ? // Stryker disable next-line OptionalChaining: equivalent: graphql-js's parser always gives a field its `arguments` array (empty when none).
          pageSize(sel.arguments?.find((a) => a.name.value === 'limit')?.value, variables)
        : listSize(named.name, field.name, field.type)
      cost += times * each
    }
    return cost
  }
  const cost = walk(operation.selectionSet, root, 1)
  const errors: GraphQLError[] = []
  if (maxDepth > MAX_DEPTH) {
    errors.push(
      documentError(`The query is nested ${maxDepth} levels deep; at most ${MAX_DEPTH} are allowed`, {
        limit: 'depth',
        observed: maxDepth,
        max: MAX_DEPTH,
      }),
    )
  }
  if (cost > MAX_COST) {
    errors.push(
      documentError(
        `The query may return ${cost} objects; at most ${MAX_COST} are allowed (lower the page limits or select less)`,
        { limit: 'cost', observed: cost, max: MAX_COST },
      ),
    )
  }
  return errors
}

/** A list field's bound: a page's data is counted by its page field, other lists by LIST_BOUNDS. */
function listSize(parent: string, field: string, type: GraphQLType): number {
  if (!isListType(getNullableType(type))) return 1
  // Stryker disable next-line LogicalOperator,StringLiteral: equivalent: only page types (…Page) have a `data` field, and their other fields are scalars, which never get here.
  if (field === 'data' && parent.endsWith('Page')) return 1
  return LIST_BOUNDS[`${parent}.${field}`] ?? DEFAULT_PAGE_LIMIT
}

interface ListBound {
  /** Items one parent may hold. */
  per: number
  /** Items the whole schema holds: the bound under distinct parents. */
  total: number
}

// Stryker disable next-line all: unreachable: every list field of graphql-js's introspection types has its bound below; the fallback is for a newer graphql-js.
const FALLBACK: ListBound = { per: MAX_PAGE_LIMIT, total: MAX_PAGE_LIMIT }

const boundsBySchema = new WeakMap<GraphQLSchema, Map<string, ListBound>>()

/**
 * The exact sizes of the introspection lists of one schema, counted once: when the schema is built (graphqlSchema
 * calls it), so the first introspection request does not pay for it.
 */
export function introspectionBounds(schema: GraphQLSchema): Map<string, ListBound> {
  const known = boundsBySchema.get(schema)
  if (known) return known
  const types = Object.values(schema.getTypeMap())
  const directives = schema.getDirectives()
  const sizes = (lists: readonly (readonly unknown[])[]): ListBound => ({
    per: Math.max(0, ...lists.map((l) => l.length)),
    total: lists.reduce((n, l) => n + l.length, 0),
  })
  const fieldLists = types.map((t) =>
    isObjectType(t) || isInterfaceType(t) ? Object.values(t.getFields()) : [],
  )
  const bounds = new Map<string, ListBound>([
    // Stryker disable next-line StringLiteral: equivalent: without its own entry `__Schema.types` takes the `*` bound, which is the same ({ per: types, total: types }).
    ['__Schema.types', sizes([types])],
    ['__Schema.directives', sizes([directives])],
    ['__Type.fields', sizes(fieldLists)],
    [
      '__Type.inputFields',
      sizes(types.map((t) => (isInputObjectType(t) ? Object.values(t.getFields()) : []))),
    ],
    ['__Type.enumValues', sizes(types.map((t) => (isEnumType(t) ? t.getValues() : [])))],
    [
      '__Type.interfaces',
      sizes(types.map((t) => (isObjectType(t) || isInterfaceType(t) ? t.getInterfaces() : []))),
    ],
    ['__Type.possibleTypes', sizes(types.map((t) => (isAbstractType(t) ? schema.getPossibleTypes(t) : [])))],
    ['__Field.args', sizes(fieldLists.flat().map((f) => f.args))],
    ['__Directive.args', sizes(directives.map((d) => d.args))],
    // A list introspection may grow (a newer graphql-js): bounded by the number of types.
    // Stryker disable next-line all: unreachable with this graphql-js (see FALLBACK); `__Schema.types` has the same bound, so only it could tell, and it has its own entry.
    ['*', { per: types.length, total: types.length }],
  ])
  boundsBySchema.set(schema, bounds)
  return bounds
}

function pageSize(node: ValueNode | undefined, variables: Record<string, unknown>): number {
  let value: unknown = DEFAULT_PAGE_LIMIT
  if (node?.kind === Kind.INT) value = Number(node.value)
  else if (node?.kind === Kind.VARIABLE) value = variables[node.name.value] ?? DEFAULT_PAGE_LIMIT
  // An out-of-range limit is refused by the resolver itself (400 invalid_request, like REST); cost it at the maximum.
  return typeof value === 'number' && value >= 1 && value <= MAX_PAGE_LIMIT ? value : MAX_PAGE_LIMIT
}
