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
export function shifted(sql: string, offset: number): string {
  return sql.replace(PLACEHOLDER_OR_QUOTED, (match, n: string | undefined) =>
    n === undefined ? match : `$${Number(n) + offset}`,
  )
}

/** The highest placeholder number of the text: how many parameters it takes. */
export function placeholders(sql: string): number {
  let most = 0
  for (const m of sql.matchAll(PLACEHOLDER_OR_QUOTED))
    if (m[1] !== undefined) most = Math.max(most, Number(m[1]))
  return most
}

/**
 * Combined texts by the writes' texts, as a tree with a level per write: a unit's texts are the same constants every
 * time (a create's is about 1.5 kB), so each combination is built once, not on every commit. Bounded, in case texts
 * are built per call: past the bound, texts are combined without being kept.
 */
interface Combination {
  next: Map<string, Combination>
  /** How many parameters the text of the write leading here takes. */
  takes: number
  /** The combined text of the writes on the path to here; null when it cannot be combined (dollar quoting). */
  sql?: string | null
}
const combinations: Combination = { next: new Map(), takes: 0 }
let kept = 0
const MAX_KEPT = 1_000

/**
 * The combined text, or null: dollar quoting, or a write given another number of parameters than its text takes
 * (sent one by one, PostgreSQL then refuses that write, where combined its values would land in the next one's).
 */
function combinedText(writes: readonly Statement[]): string | null {
  let node = combinations
  for (const w of writes) {
    let next = node.next.get(w.sql)
    if (!next) {
      if (kept >= MAX_KEPT) return combine(writes)
      next = { next: new Map(), takes: placeholders(w.sql) }
      node.next.set(w.sql, next)
      kept += 1
    }
    if ((w.params?.length ?? 0) !== next.takes) return null
    node = next
  }
  if (node.sql === undefined) node.sql = combine(writes)
  return node.sql
}

/** Whether a text can be a WITH query of a combined statement: no dollar quoting, and as many values as it takes. */
export function combinable(w: Statement): boolean {
  return !/\$[A-Za-z_]*\$/.test(w.sql) && (w.params?.length ?? 0) === placeholders(w.sql)
}

function combine(writes: readonly Statement[]): string | null {
  let offset = 0
  const parts: string[] = []
  for (const [i, w] of writes.entries()) {
    if (!combinable(w)) return null
    parts.push(`w${i} AS (${shifted(w.sql, offset)})`)
    offset += placeholders(w.sql)
  }
  return `WITH ${parts.join(',\n')}\nSELECT 1 WHERE false`
}

/**
 * The writes as one statement, their parameters one list; undefined, and the caller sends the writes one by one,
 * when a text holds dollar quoting (`$$`, `$tag$`: not rewritten) or a write's parameters do not match its text.
 */
export function asOneStatement(writes: readonly Statement[]): Statement | undefined {
  const sql = combinedText(writes)
  if (sql === null) return undefined
  const params: SqlValue[] = []
  for (const w of writes) if (w.params) for (const p of w.params) params.push(p)
  return { sql, params }
}
