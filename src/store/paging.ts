import type { Slice } from '../domain/pagination.js'

/** List queries ask for one row past the page: its presence alone says another page exists. */
export function lookAheadLimit(limit: number): number {
  return limit + 1
}

export function toSlice<R>(rows: R[], limit: number): Slice<R> {
  return rows.length > limit ? { rows: rows.slice(0, limit), more: true } : { rows, more: false }
}
