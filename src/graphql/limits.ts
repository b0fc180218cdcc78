import {
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLSchema,
  type GraphQLType,
  getNamedType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql'
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../domain/pagination.js'
import { documentError } from './errors.js'

export const MAX_DEPTH = 12
export const MAX_COST = 10_000

/**
 * Depth and cost limits, checked before anything executes. Cost counts every object a response may hold: a
 * page field (one taking `limit`) multiplies its selection by its limit (default 50, at most 200), so
 * `agents(limit: 200) { runs(limit: 200) { ... } }` costs 40,000 and is refused before a single query runs.
 * Introspection (`__schema`, `__type`) is bounded by the schema itself and is not counted.
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
      : operation.operation === 'mutation'
        ? schema.getMutationType()
        : schema.getSubscriptionType()
  if (!root) return []
  let maxDepth = 0
  const walk = (set: SelectionSetNode, type: GraphQLType, depth: number, seen: Set<string>): number => {
    const named = getNamedType(type)
    if (!isObjectType(named)) return 0
    maxDepth = Math.max(maxDepth, depth)
    let cost = 0
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        const name = sel.name.value
        if (name.startsWith('__')) continue
        const field = named.getFields()[name]
        if (!field || !sel.selectionSet) continue
        const limitArg = field.args.find((a) => a.name === 'limit')
        const each = 1 + walk(sel.selectionSet, field.type, depth + 1, seen)
        const times = limitArg
          ? pageSize(sel.arguments?.find((a) => a.name.value === 'limit')?.value, variables)
          : 1
        cost += times * each
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        cost += walk(sel.selectionSet, type, depth, seen)
      } else {
        const name = sel.name.value
        const frag = fragments.get(name)
        // A fragment spread inside itself is refused by validation (NoFragmentCycles); guard anyway.
        if (!frag || seen.has(name)) continue
        cost += walk(frag.selectionSet, type, depth, new Set([...seen, name]))
      }
    }
    return cost
  }
  const cost = walk(operation.selectionSet, root, 1, new Set())
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

function pageSize(node: ValueNode | undefined, variables: Record<string, unknown>): number {
  let value: unknown = DEFAULT_PAGE_LIMIT
  if (node?.kind === Kind.INT) value = Number(node.value)
  else if (node?.kind === Kind.VARIABLE) value = variables[node.name.value] ?? DEFAULT_PAGE_LIMIT
  // An out-of-range limit is refused by the resolver itself (400 invalid_request, like REST); cost it at the maximum.
  return typeof value === 'number' && value >= 1 && value <= MAX_PAGE_LIMIT ? value : MAX_PAGE_LIMIT
}
