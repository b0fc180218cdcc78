/**
 * A deferred unit with quota counts as one PostgreSQL statement that keeps COUNTS_FIRST (src/store/postgres/
 * statements.ts): every transaction takes its workspace's usage rows, in the order it counts them, before any lock
 * its other writes may wait for (the event log's append lock), so two commits never wait on each other in a cycle.
 *
 * PostgreSQL runs the WITH queries of one statement in an order of its own, unless one reads another's RETURNING
 * rows: "RETURNING data is the only way to communicate changes between different WITH sub-statements". So the
 * counts form a chain, each reading all of the previous one's rows before it takes its own row (InOneStatement's
 * `after`), and every other write that may wait reads the last count's rows first. Writes that wait for nothing (a
 * fresh id's row, a lock only tried) go as they are. The statement returns each count's rows, as `answered` wants
 * them. A unit one of whose writes has no InOneStatement is not combined (undefined): it goes as its statements.
 */
import type { InOneStatement, SqlValue } from './db.js'
import { combinable, placeholders, type Statement, shifted } from './one-statement.js'

export interface OrderedWrite extends Statement {
  order?: InOneStatement | undefined
}

/** The unit's writes by their place in the sequential order: the claim, the counts in order, then the others. */
export interface DeferredWrites {
  first: readonly OrderedWrite[]
  counts: readonly OrderedWrite[]
  others: readonly OrderedWrite[]
}

export interface OrderedStatement extends Statement {
  /** The statement's one row holds count i's rows (a JSON array, or null for none) in this column. */
  countColumns: readonly string[]
}

/**
 * An expression worth 0 that reads every RETURNING row of the WITH query `after`: added to a value a write computes
 * before it takes its lock, it makes the write wait until `after` has run.
 */
export function zeroAfter(after: string): string {
  return `0 * (SELECT count(*) FROM ${after})`
}

/** The name of count i's WITH query, and of the column its rows come back in. */
const countName = (i: number) => `c${i}`

/** A write's text in its place: after the WITH query `gate` (when it may wait), or as it stands. */
function placed(write: OrderedWrite, gate: string | null): string | null {
  const order = write.order
  if (order === undefined) return null
  if (order === 'waits-for-nothing') return write.sql
  return order.after(gate)
}

/**
 * The combined texts, as a tree with a level per write (texts in sending order) and, at its end, a text per split
 * into claim, counts and others: a unit's texts are the same few constants every time, so each combination is built
 * once, with no key made per commit. Bounded, in case texts are built per call: past the bound, texts are combined
 * without being kept.
 */
interface Built {
  next: Map<string, Built>
  /** How many parameters the text of the write leading here takes. */
  takes: number
  /** The combined text by `first.length/counts.length`; null when it cannot be combined. */
  texts: Map<string, string | null>
}
const tree: Built = { next: new Map(), takes: 0, texts: new Map() }
let kept = 0
const MAX_KEPT = 1_000

function textOf(writes: DeferredWrites, all: readonly OrderedWrite[]): string | null {
  let node = tree
  for (const w of all) {
    let next = node.next.get(w.sql)
    if (!next) {
      if (kept >= MAX_KEPT) return build(writes)
      next = { next: new Map(), takes: placeholders(w.sql), texts: new Map() }
      node.next.set(w.sql, next)
      kept += 1
    }
    // Given another number of values than its text takes, they would land in the next write's placeholders.
    if ((w.params?.length ?? 0) !== next.takes) return null
    node = next
  }
  const split = `${writes.first.length}/${writes.counts.length}`
  let text = node.texts.get(split)
  if (text === undefined) {
    text = build(writes)
    node.texts.set(split, text)
  }
  return text
}

function allOf(writes: DeferredWrites): OrderedWrite[] {
  return [...writes.first, ...writes.counts, ...writes.others]
}

function build(writes: DeferredWrites): string | null {
  const parts: string[] = []
  let offset = 0
  const add = (name: string, write: OrderedWrite, text: string | null): boolean => {
    if (text === null || !combinable({ sql: text, params: write.params })) return false
    parts.push(`${name} AS (${shifted(text, offset)})`)
    offset += write.params?.length ?? 0
    return true
  }
  const lastCount = countName(writes.counts.length - 1)
  for (const [i, w] of writes.first.entries()) if (!add(`b${i}`, w, placed(w, lastCount))) return null
  for (const [i, w] of writes.counts.entries()) {
    // A count must be ordered: it waits for its usage row.
    if (w.order === undefined || w.order === 'waits-for-nothing') return null
    if (!add(countName(i), w, w.order.after(i === 0 ? null : countName(i - 1)))) return null
  }
  for (const [i, w] of writes.others.entries()) if (!add(`w${i}`, w, placed(w, lastCount))) return null
  const columns = writes.counts.map(
    (_, i) => `(SELECT json_agg(${countName(i)}) FROM ${countName(i)}) AS ${countName(i)}`,
  )
  return `WITH ${parts.join(',\n')}\nSELECT ${columns.join(', ')}`
}

/** The unit as one statement, its parameters one list; undefined when it has no counts or cannot be combined. */
export function asOrderedStatement(writes: DeferredWrites): OrderedStatement | undefined {
  if (writes.counts.length === 0) return undefined
  const all = allOf(writes)
  const sql = textOf(writes, all)
  if (sql === null) return undefined
  const params: SqlValue[] = []
  for (const w of all) if (w.params) for (const p of w.params) params.push(p)
  return { sql, params, countColumns: writes.counts.map((_, i) => countName(i)) }
}
