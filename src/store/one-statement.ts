/**
 * Independent writes as one PostgreSQL statement: each becomes a data-modifying WITH query of a statement that
 * selects nothing. PostgreSQL runs every data-modifying WITH query exactly once and to completion, and a statement
 * is atomic on its own: all of them commit together, or the first error rolls all of them back, with no BEGIN and
 * no COMMIT to send and answer.
 *
 * "Independent": the WITH queries run on one snapshot and do not see each other's rows, so no write may depend on
 * another's effect (a deferred unit's writes, which use no result, are written that way: see Db.deferredUnitOfWork).
 */
import type { SqlValue } from './db.js'

export interface Statement {
  sql: string
  params?: readonly SqlValue[] | undefined
}

/** `$n` placeholders outside quoted text ('…', "…"). */
const PLACEHOLDER_OR_QUOTED = /'(?:[^']|'')*'|"(?:[^"]|"")*"|\$(\d+)/g

/** The statement's text with every placeholder `$n` moved to `$(n + offset)`. */
function shifted(sql: string, offset: number): string {
  return sql.replace(PLACEHOLDER_OR_QUOTED, (match, n: string | undefined) =>
    n === undefined ? match : `$${Number(n) + offset}`,
  )
}

/**
 * The writes as one statement, their parameters one list. A text holding dollar quoting (`$$`, `$tag$`) is not
 * rewritten: undefined, and the caller sends the writes one by one.
 */
export function asOneStatement(writes: readonly Statement[]): Statement | undefined {
  if (writes.some((w) => /\$[A-Za-z_]*\$/.test(w.sql))) return undefined
  const params: SqlValue[] = []
  const parts: string[] = []
  for (const [i, w] of writes.entries()) {
    parts.push(`w${i} AS (${shifted(w.sql, params.length)})`)
    params.push(...(w.params ?? []))
  }
  return { sql: `WITH ${parts.join(',\n')}\nSELECT 1 WHERE false`, params }
}
