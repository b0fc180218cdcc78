import { ApiError } from './errors.js'

export const DEFAULT_PAGE_LIMIT = 50
export const MAX_PAGE_LIMIT = 200

/** A page request after decoding: resume strictly after `afterSeq` (0 = from the start). */
export interface PageRequest {
  afterSeq: number
  limit: number
}

/**
 * One page of rows from a repository and whether more follow. Repositories find `more` by reading one row past
 * the page (src/store/paging.ts); nothing above the store knows how.
 */
export interface Slice<R> {
  rows: R[]
  more: boolean
}

export interface Page<T> {
  data: T[]
  next_cursor: string | null
}

/**
 * Cursors are opaque to clients but carry the list they belong to, so a cursor from one list (or a forged one)
 * is refused with 400 invalid_cursor instead of silently paging something else.
 */
export function encodeCursor(list: string, seq: number): string {
  return Buffer.from(JSON.stringify({ l: list, k: seq }), 'utf8').toString('base64url')
}

export function decodeCursor(list: string, cursor: string | undefined | null): number {
  if (cursor === undefined || cursor === null || cursor === '') return 0
  let parsed: unknown
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url')
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw invalidCursor()
  }
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    (parsed as { l?: unknown }).l !== list ||
    !Number.isSafeInteger((parsed as { k?: unknown }).k) ||
    ((parsed as { k: number }).k as number) < 0
  ) {
    throw invalidCursor()
  }
  return (parsed as { k: number }).k
}

function invalidCursor(): ApiError {
  return new ApiError('invalid_cursor', 'The cursor is not valid for this list; start again without one', {
    parameter: 'cursor',
  })
}

export function pageRequest(
  list: string,
  query: { cursor?: string | undefined; limit?: number | undefined },
): PageRequest {
  const limit = query.limit ?? DEFAULT_PAGE_LIMIT
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new ApiError('invalid_request', `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}`, {
      issues: [{ path: 'limit', message: `must be from 1 to ${MAX_PAGE_LIMIT}` }],
      fields: ['limit'],
    })
  }
  return { afterSeq: decodeCursor(list, query.cursor), limit }
}

/** The contract's list body: the page's items and a cursor after its last row when more follow. */
export function toPage<R extends { seq: number }, T>(
  list: string,
  slice: Slice<R>,
  map: (row: R) => T,
): Page<T> {
  const last = slice.rows.at(-1)
  return {
    data: slice.rows.map(map),
    next_cursor: slice.more && last ? encodeCursor(list, last.seq) : null,
  }
}
