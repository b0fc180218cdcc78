import { getOperationAST, parse } from 'graphql'
import { MAX_TOKENS } from './prepare.js'

/**
 * Whether a POST to /v1/graphql is a query (`read`) or a mutation (`write`), for the idempotency middleware, which
 * runs before the document is executed: queries are not keyed (their answer is not stored, a retry runs them again),
 * mutations are. Undefined when the body is no GraphQL request: it is keyed, and the handler refuses it.
 */
export function graphqlPostKind(body: string): 'read' | 'write' | undefined {
  try {
    const request: unknown = JSON.parse(body)
    // Stryker disable next-line ConditionalExpression,LogicalOperator: equivalent: without this guard a null body throws on the destructuring below (caught: undefined) and any other non-object has no string `query` (undefined on the next line); the mutators go whole, so the `true` variant (every POST keyed) goes with them, while EqualityOperator's and StringLiteral's variants stay judged (graphql.idempotency-keys-mutations-only).
    if (typeof request !== 'object' || request === null) return undefined
    const { query, operationName } = request as { query?: unknown; operationName?: unknown }
    // Stryker disable next-line ConditionalExpression: `false` is equivalent (parse() of a value that is no string throws, caught: undefined); the mutator goes whole, its `true` with it, while EqualityOperator's and StringLiteral's variants (every query keyed) stay judged.
    if (typeof query !== 'string') return undefined
    const document = parse(query, { maxTokens: MAX_TOKENS })
    // Stryker disable next-line ConditionalExpression: `true` hands a non-string operationName on, which names no operation (undefined: keyed), but the handler refuses such a request with a 400 the idempotency store never keeps, so nothing tells the two apart; the mutator goes whole, its `false` with it, while EqualityOperator's and StringLiteral's variants stay judged (graphql.idempotency-keys-mutations-only).
    const operation = getOperationAST(document, typeof operationName === 'string' ? operationName : undefined)
    // Stryker disable next-line OptionalChaining: equivalent: a missing operation throws on `.operation`, caught: undefined, as the next line answers.
    if (operation?.operation === 'query') return 'read'
    // Stryker disable next-line StringLiteral: equivalent: the idempotency middleware asks only whether the kind is 'read' (src/http/middleware/idempotency.ts); any other string is keyed like 'write'.
    return operation ? 'write' : undefined
  } catch {
    // Not JSON, not a document, or nested past what the parser takes: the handler answers 400 for each.
    return undefined
  }
}
