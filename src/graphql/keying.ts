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
    // A body that is JSON but no object: null throws here (caught below), anything else has no string `query`.
    const { query, operationName } = request as { query?: unknown; operationName?: unknown }
    if (typeof query !== 'string') return undefined
    const document = parse(query, { maxTokens: MAX_TOKENS })
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
