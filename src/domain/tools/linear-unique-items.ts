/**
 * JSON Schema's `uniqueItems` for tools' schemas in time linear in the array: each item's RFC 8785 form (JSON
 * equality, as the keyword means it: 1 and 1.0 alike, an object's keys in any order) goes into a set. Ajv compares
 * items of objects pair by pair, quadratic in their count: an answer of 20,000 small objects held the server's only
 * thread 5.7 s, and the 8 MiB an http tool may answer would hold it for hours. Ajv takes it in place of its own
 * through its public keyword API.
 */
import type { FuncKeywordDefinition } from 'ajv/dist/2020.js'
import { canonicalize } from '../../../client/src/canonical-json.js'

/** An error as a failed step shows it: its place (Ajv adds it) and its message (providers.ts errorLine). */
interface DuplicateError {
  message: string
}

/** Whether the array's items are pairwise distinct; Ajv's own wording when two are not. */
function uniqueItems(schema: unknown, data: unknown): boolean {
  uniqueItems.errors = undefined
  if (schema !== true || !Array.isArray(data)) return true
  const seen = new Map<string, number>()
  for (let i = 0; i < data.length; i++) {
    const form = canonicalize(data[i])
    const j = seen.get(form)
    if (j !== undefined) {
      uniqueItems.errors = [
        {
          message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
        },
      ]
      return false
    }
    seen.set(form, i)
  }
  return true
}
uniqueItems.errors = undefined as DuplicateError[] | undefined

/** The keyword for any instance (the function lets all but arrays pass) and any value (the meta-schema holds it to a boolean). */
export const linearUniqueItems: FuncKeywordDefinition = {
  keyword: 'uniqueItems',
  errors: true,
  validate: uniqueItems,
}
