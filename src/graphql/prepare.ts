import {
  type DocumentNode,
  GraphQLError,
  getOperationAST,
  type OperationDefinitionNode,
  parse,
  specifiedRules,
  validate,
  visit,
} from 'graphql'
import {
  findUnstorableText,
  type UnstorableText,
  unstorableReason,
  unstorableTextError,
} from '../domain/text.js'
import { checkLimits } from './limits.js'
import { graphqlSchema } from './schema.js'

/** Tokens a document may hold; parsing stops there, so a huge document costs bounded work. */
export const MAX_TOKENS = 5_000

export type Prepared =
  | { ok: true; document: DocumentNode; operation: OperationDefinitionNode }
  | { ok: false; errors: readonly GraphQLError[] }

/** Parse, validate, pick the operation and apply the depth and cost limits; nothing has executed yet. */
export function prepare(
  query: string,
  operationName: string | null | undefined,
  variables: Record<string, unknown>,
): Prepared {
  const schema = graphqlSchema()
  let document: DocumentNode
  try {
    document = parse(query, { maxTokens: MAX_TOKENS })
  } catch (err) {
    if (err instanceof GraphQLError) return { ok: false, errors: [err] }
    throw err
  }
  // HTTP bodies and query strings pass the text guard before they get here; graphql-ws messages do not, and a
  // string literal's escapes (\u0000) are decoded only by the parser. One check here covers both transports.
  const unstorable = unstorableIn(document, variables)
  if (unstorable) {
    const error = unstorableTextError('document', unstorable)
    return { ok: false, errors: [new GraphQLError(error.message, { originalError: error })] }
  }
  const invalid = validate(schema, document, specifiedRules, { maxErrors: 20 })
  if (invalid.length > 0) return { ok: false, errors: invalid }
  const operation = getOperationAST(document, operationName ?? undefined)
  if (!operation) {
    const message = operationName
      ? `No operation named "${operationName}" in the document`
      : 'The document holds several operations: name one with operationName'
    return { ok: false, errors: [new GraphQLError(message)] }
  }
  const limits = checkLimits(schema, document, operation, variables)
  if (limits.length > 0) return { ok: false, errors: limits }
  return { ok: true, document, operation }
}

/** The first variable or string literal (decoded) that no store can keep. */
function unstorableIn(
  document: DocumentNode,
  variables: Record<string, unknown>,
): UnstorableText | undefined {
  const inVariables = findUnstorableText(variables, 'variables')
  if (inVariables) return inVariables
  let found: UnstorableText | undefined
  visit(document, {
    StringValue(node) {
      const reason = found ? undefined : unstorableReason(node.value)
      if (reason) found = { path: 'query', message: `A string literal ${reason}` }
    },
  })
  return found
}
