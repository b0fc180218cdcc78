import { decodeCursor, encodeCursor } from './cursors.js'
import { ApiError } from './errors.js'

export { decodeCursor, encodeCursor }

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
 * A list request's page. `list` names the list and its filter (`tools:all`, `records:<connector>`): a cursor is
 * bound to it and to the workspace (src/domain/cursors.ts), so it pages nothing else.
 */
export function pageRequest(
  workspaceId: string,
  list: string,
  query: { cursor?: string | undefined; limit?: number | undefined },
): PageRequest {
  const limit = query.limit ?? DEFAULT_PAGE_LIMIT
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    // Stryker disable ObjectLiteral,ArrayDeclaration,StringLiteral: §7 detail is "Context", its fields named for policy_denied only: the reference's choice.
    const detail = {
      issues: [{ path: 'limit', message: `must be from 1 to ${MAX_PAGE_LIMIT}` }],
      fields: ['limit'],
    }
    // Stryker restore ObjectLiteral,ArrayDeclaration,StringLiteral
    throw new ApiError('invalid_request', `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}`, detail)
  }
  return { afterSeq: decodeCursor(workspaceId, list, query.cursor), limit }
}

/** The contract's list body: the page's items and a cursor after its last row when more follow. */
export function toPage<R extends { seq: number }, T>(
  workspaceId: string,
  list: string,
  slice: Slice<R>,
  map: (row: R) => T,
): Page<T> {
  const last = slice.rows.at(-1)
  return {
    data: slice.rows.map(map),
    next_cursor: slice.more && last ? encodeCursor(workspaceId, list, last.seq) : null,
  }
}
