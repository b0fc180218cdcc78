import { describe, expect, it } from 'vitest'
import type { CheckContext } from '../src/check.js'
import { resolveConfig } from '../src/config.js'
import { nextPageCursor } from '../src/fixtures.js'
import type { HttpResponse } from '../src/http.js'

const ctxWith = (paging: { cursorField?: string; itemsField?: string } = {}): CheckContext => {
  const config = resolveConfig([], {}).config
  config.paging = paging
  return { config } as CheckContext
}

const page = (body: unknown): HttpResponse => ({
  status: 200,
  headers: {},
  body,
  text: JSON.stringify(body),
  exchange: { method: 'GET', url: 'http://x/v1/tools', requestHeaders: {}, durationMs: 0 },
})

describe('the next cursor of a list page', () => {
  it('follows a known field and ends on null or a short page', () => {
    expect(nextPageCursor(ctxWith(), page({ data: [1, 2], next_cursor: 'c2' }), 2, 'list')).toBe('c2')
    expect(nextPageCursor(ctxWith(), page({ data: [1, 2], next_cursor: null }), 2, 'list')).toBeNull()
    // A short page without any cursor field is the last page, whatever the field would have been called.
    expect(nextPageCursor(ctxWith(), page({ data: [1] }), 2, 'list')).toBeNull()
  })

  it('fails a full page under an unknown field naming what it looked for and the setting to declare', () => {
    const run = () =>
      nextPageCursor(ctxWith(), page({ data: [1, 2], continuation: 'c2' }), 2, 'GET /v1/tools?limit=2')
    expect(run).toThrow(/names no next cursor the suite recognises/)
    expect(run).toThrow(/next_cursor, nextCursor, next_page_token/)
    expect(run).toThrow(/"continuation"/)
    expect(run).toThrow(/paging\.cursorField in --config/)
  })

  it('fails a full page that lacks the declared field, naming the declaration', () => {
    const run = () =>
      nextPageCursor(
        ctxWith({ cursorField: 'meta.next' }),
        page({ data: [1, 2], next_cursor: 'c2' }),
        2,
        'list',
      )
    expect(run).toThrow(/no field "meta\.next", the next-cursor field declared by paging\.cursorField/)
    expect(
      nextPageCursor(
        ctxWith({ cursorField: 'meta.next' }),
        page({ data: [1, 2], meta: { next: 'c2' } }),
        2,
        'list',
      ),
    ).toBe('c2')
  })
})
