import type { Slice } from '../domain/pagination.js'
import type { Queryable, Row } from './db.js'

/** List queries ask for one row past the page: its presence alone says another page exists. */
export function lookAheadLimit(limit: number): number {
  return limit + 1
}

export function toSlice<R>(rows: R[], limit: number): Slice<R> {
  return rows.length > limit ? { rows: rows.slice(0, limit), more: true } : { rows, more: false }
}

/**
 * One page of a child table in `seq` order after a cursor: `SELECT * FROM <table> WHERE <column> = $1 AND seq > $2
 * ORDER BY seq LIMIT $3`, one row looked ahead. Table and column are this module's callers' constants, never input.
 */
export async function childPage<Raw extends Row, R>(
  db: Queryable,
  table: string,
  column: string,
  value: string,
  afterSeq: number,
  limit: number,
  convert: (row: Raw) => R,
): Promise<Slice<R>> {
  const rows = await db.query<Raw>(
    `SELECT * FROM ${table} WHERE ${column} = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [value, afterSeq, lookAheadLimit(limit)],
  )
  return toSlice(rows.map(convert), limit)
}
