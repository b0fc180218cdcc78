import {
  type DocumentNode,
  GraphQLError,
  getOperationAST,
  Lexer,
  type OperationDefinitionNode,
  parse,
  Source,
  specifiedRules,
  TokenKind,
  validate,
  visit,
} from 'graphql'
import type { ApiError } from '../domain/errors.js'
import { MAX_JSON_DEPTH, tooDeepAt, tooDeepError } from '../domain/json-depth.js'
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
  // Before the parser, whose recursion a list literal nested a few thousand deep exhausted (a 500; 4500 on graphql-ws).
  const tooDeep = nestingTooDeep(query, variables)
  if (tooDeep) return { ok: false, errors: [new GraphQLError(tooDeep.message, { originalError: tooDeep })] }
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

/**
 * The depth limit (MAX_JSON_DEPTH) on the variables and on the document's own nesting: braces, brackets and
 * parentheses counted by graphql's lexer (iterative, and stopped at MAX_TOKENS like the parser), so list and object
 * literals are bounded as JSON values are. A lexing error is left to the parser to report.
 */
function nestingTooDeep(query: string, variables: Record<string, unknown>): ApiError | undefined {
  const inVariables = tooDeepAt(variables, MAX_JSON_DEPTH - 1)
  if (inVariables !== undefined) return tooDeepError('variables', inVariables)
  const lexer = new Lexer(new Source(query))
  let depth = 0
  try {
    for (
      let token = lexer.advance(), n = 0;
      // Stryker disable next-line LogicalOperator: equivalent: past EOF the lexer answers EOF again, no opener, until n reaches MAX_TOKENS.
      token.kind !== TokenKind.EOF && n < MAX_TOKENS;
      token = lexer.advance(), n++
    ) {
      if (OPENING.has(token.kind)) {
        if (++depth > MAX_JSON_DEPTH) return tooDeepError('query', `line ${token.line}`)
      } else if (CLOSING.has(token.kind)) depth--
    }
  } catch {
    return undefined
  }
  return undefined
}

const OPENING: ReadonlySet<string> = new Set([TokenKind.BRACE_L, TokenKind.BRACKET_L, TokenKind.PAREN_L])
const CLOSING: ReadonlySet<string> = new Set([TokenKind.BRACE_R, TokenKind.BRACKET_R, TokenKind.PAREN_R])

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
