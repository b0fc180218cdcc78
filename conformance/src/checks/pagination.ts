/**
 * Spec §8: cursor pagination with `cursor` and `limit`, at most 200. Exercised on GET /v1/tools, the one list the
 * spec itself names, after making sure the workspace has more than 200 tools.
 */
import type { Check, CheckContext } from '../check.js'
import { expectStatus, listPage, nextPageCursor, pageItems, toolId } from '../fixtures.js'
import { obj } from '../http.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { expectEnvelope, expectError } from './assertions.js'

const MANY = 205
const made = new WeakMap<object, Promise<{ ours: Set<string>; total: number }>>()

async function listAll(
  ctx: CheckContext,
  limit: number,
): Promise<{ ids: string[]; pages: number; lastCursor: unknown; emptyTail: boolean }> {
  const ids: string[] = []
  let cursor: string | null | undefined
  let pages = 0
  let lastCursor: unknown
  for (let i = 0; i < 200; i++) {
    const res = await ctx.http.get(
      `/v1/tools?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )
    expectStatus(res, 200, `page ${pages + 1} of GET /v1/tools`)
    const { items } = listPage(ctx, res)
    if (!items) fail(`the list answer has no array of items: ${short(res.body)}`)
    const next = nextPageCursor(ctx, res, limit, `page ${pages + 1} of GET /v1/tools?limit=${limit}`)
    assert(items.length <= limit, `page ${pages + 1} has ${items.length} items for limit=${limit}`)
    pages++
    for (const item of items) ids.push(String(toolId(item)))
    // The raw value, for the profile's "null on the last page" (discovery reads "" as no next page too).
    lastCursor = 'next_cursor' in obj(res.body) ? obj(res.body).next_cursor : next
    cursor = next
    if (!cursor || items.length === 0)
      return { ids, pages, lastCursor, emptyTail: pages > 1 && items.length === 0 }
  }
  fail('the walk did not end within 200 pages')
}

/** Makes sure the workspace lists more than 200 tools; returns the ids this run registered and the list's size. */
function manyTools(ctx: CheckContext): Promise<{ ours: Set<string>; total: number }> {
  let p = made.get(ctx.config)
  if (!p) {
    p = (async () => {
      const ours = new Set<string>()
      const existing = (await listAll(ctx, 200)).ids.length
      const missing = Math.max(0, MANY - existing)
      for (let i = 0; i < missing; i += 10) {
        const batch = Array.from({ length: Math.min(10, missing - i) }, async () => {
          const name = ctx.name('page')
          // Under a key of its own, so a registration whose connection dropped before the answer can be sent again.
          const res = await ctx.http.post(
            '/v1/tools',
            {
              name,
              provider: ctx.config.profile.tools.succeed.provider,
              input_schema: { type: 'object' },
              output_schema: {},
              policy_binding: { envelope: 'default', required_scopes: [] },
              idempotent: true,
            },
            { headers: { 'idempotency-key': `conf-${name}` } },
          )
          expectStatus(res, [200, 201], 'registering a tool for the pagination checks')
          const id = toolId(res.body)
          if (!id) fail(`no tool id in ${short(res.body)}`)
          ours.add(id)
          ctx.cleanup(`retire tool ${name}`, (http) => http.delete(`/v1/tools/${id}`))
        })
        await Promise.all(batch)
      }
      return { ours, total: existing + ours.size }
    })()
    made.set(ctx.config, p)
    p.catch(() => made.delete(ctx.config))
  }
  return p
}

/**
 * Cursors this deployment issued, each edited the way a client's bug or a tamperer would: one character dropped at
 * the end or the start, one changed at the start, near it, in the middle and at the end. Whether such a cursor still
 * names a page depends on the deployment's cursor format (the spec leaves it open); it is never a transient failure.
 */
async function editedCursors(ctx: CheckContext): Promise<string[]> {
  await manyTools(ctx)
  const first = await ctx.http.get('/v1/tools?limit=1')
  expectStatus(first, 200, 'GET /v1/tools?limit=1')
  const cursor = nextPageCursor(ctx, first, 1, 'GET /v1/tools?limit=1')
  if (!cursor) fail(`the first page of /v1/tools?limit=1 has no next cursor: ${short(first.body)}`)
  // The top bit of a base64 digit flipped (the last digit's low bits may be padding, which decoders ignore).
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const swap = (c: string) => {
    const i = B64.indexOf(c)
    return i < 0 ? 'A' : B64[i ^ 32]!
  }
  const at = (i: number) => cursor.slice(0, i) + swap(cursor[i]!) + cursor.slice(i + 1)
  return [
    at(0),
    cursor.slice(0, -1),
    cursor.slice(1),
    at(Math.min(3, cursor.length - 1)),
    at(Math.floor(cursor.length / 2)),
    at(cursor.length - 1),
  ].filter((c) => c !== '' && c !== cursor)
}

export const paginationChecks: Check[] = [
  {
    id: 'pagination.limit-max-200',
    title: 'No page holds more than 200 items: limit=200 is honoured, limit=201 is refused or capped',
    level: 'core',
    clauses: ['S8.2'],
    async run(ctx) {
      await manyTools(ctx)
      const at = await ctx.http.get('/v1/tools?limit=200')
      expectStatus(at, 200, 'limit=200')
      const items = pageItems(at.body) ?? []
      assert(items.length <= 200, `limit=200 returned ${items.length} items`)
      assert(items.length === 200, `limit=200 returned ${items.length} items although more than 200 exist`)
      const over = await ctx.http.get('/v1/tools?limit=201')
      if (over.status === 200) {
        const n = (pageItems(over.body) ?? []).length
        assert(n <= 200, `limit=201 returned ${n} items`)
      } else expectError(over, 400, 'limit=201')
    },
  },
  {
    id: 'pagination.limit-over-200-400',
    title: 'limit above 200 or below 1 answers 400 invalid_request',
    level: 'profile',
    clauses: ['S8.2'],
    async run(ctx) {
      for (const limit of ['201', '1000', '0', '-1', 'ten']) {
        expectError(await ctx.http.get(`/v1/tools?limit=${limit}`), 400, `limit=${limit}`, 'invalid_request')
      }
    },
  },
  {
    id: 'pagination.walk-every-item-once',
    title: 'Following the cursor yields every item exactly once',
    level: 'core',
    clauses: ['S4.7', 'S8.1'],
    async run(ctx) {
      const { ours, total } = await manyTools(ctx)
      // An odd page size, unless a long-lived workspace lists so many tools that the walk would not end in 150 pages.
      const limit = Math.max(37, Math.ceil(total / 150))
      const { ids, pages } = await listAll(ctx, limit)
      const dupes = ids.filter((id, i) => ids.indexOf(id) !== i)
      assert(dupes.length === 0, `items repeated across pages: ${[...new Set(dupes)].slice(0, 5).join(', ')}`)
      const missing = [...ours].filter((id) => !ids.includes(id))
      assert(
        missing.length === 0,
        `${missing.length} tools never appeared in ${pages} pages, e.g. ${missing[0]}`,
      )
      assert(pages >= Math.ceil(MANY / limit), `${ids.length} items came in ${pages} pages of ${limit}`)
    },
  },
  {
    id: 'pagination.page-shape',
    title: 'Lists answer {data, next_cursor}; next_cursor is null on the last page',
    level: 'profile',
    clauses: ['S8.1'],
    async run(ctx) {
      await manyTools(ctx)
      const first = obj((await ctx.http.get('/v1/tools?limit=5')).body)
      assert(Array.isArray(first.data), 'no data array')
      assert(
        typeof first.next_cursor === 'string',
        `next_cursor of a non-final page is ${short(first.next_cursor)}`,
      )
      const { lastCursor, emptyTail } = await listAll(ctx, 200)
      assert(lastCursor === null, `next_cursor of the last page is ${short(lastCursor)}`)
      // The reference reads one row past a page: the page holding the last item says there is no next page.
      assert(!emptyTail, 'the page holding the last item carried a next_cursor, which led to an empty page')
    },
  },
  {
    id: 'pagination.default-limit-50',
    title: 'Without limit a page holds 50 items',
    level: 'profile',
    clauses: ['S8.1'],
    async run(ctx) {
      await manyTools(ctx)
      const res = await ctx.http.get('/v1/tools')
      expectStatus(res, 200, 'GET /v1/tools')
      assert(
        (pageItems(res.body) ?? []).length === 50,
        `${(pageItems(res.body) ?? []).length} items without limit`,
      )
    },
  },
  {
    id: 'pagination.bad-cursor',
    title: 'A cursor the server never issued answers a 4xx with the error envelope, never a 5xx',
    level: 'core',
    clauses: ['S8.1'],
    async run(ctx) {
      for (const cursor of ['not-a-cursor', 'eyJrIjoieCJ9', '%00%01', 'A'.repeat(300)]) {
        const res = await ctx.http.get(`/v1/tools?limit=5&cursor=${cursor}`)
        assert(
          res.status >= 400 && res.status < 500,
          `GET /v1/tools?cursor=${cursor.slice(0, 20)}${cursor.length > 20 ? '…' : ''}, a cursor this deployment never issued (the suite made it up), answered ${res.status}: an unknown or undecodable cursor must be refused with a 4xx in the error envelope`,
        )
        expectEnvelope(res, `cursor=${cursor.slice(0, 20)}`)
      }
      // §7 "5xx | Transient failure": a cursor of this deployment's own with one character edited may still name a
      // page (the cursor format is the deployment's) or be refused with a 4xx; it is no transient failure.
      for (const cursor of await editedCursors(ctx)) {
        const res = await ctx.http.get(`/v1/tools?limit=5&cursor=${encodeURIComponent(cursor)}`)
        assert(
          res.status < 500,
          `GET /v1/tools?cursor=${short(cursor)}, a cursor this deployment issued with one character edited, answered ${res.status} ${short(res.body)}: a malformed cursor is no transient failure (§7), it is answered (a page) or refused with a 4xx`,
        )
        if (res.status >= 400) expectEnvelope(res, `edited cursor ${short(cursor)}`)
      }
    },
  },
  {
    id: 'pagination.bad-cursor-code',
    title:
      'A foreign or undecodable cursor answers 400 invalid_cursor, its detail naming the cursor parameter',
    level: 'profile',
    clauses: ['S8.1'],
    async run(ctx) {
      const garbage = await ctx.http.get('/v1/tools?cursor=not-a-cursor')
      expectError(garbage, 400, 'garbage cursor', 'invalid_cursor')
      // §7's detail is "Context" with no fields shown for this code: the reference names the parameter at fault.
      const detail = obj(obj(obj(garbage.body).error).detail)
      assert(
        detail.parameter === 'cursor',
        `the invalid_cursor answer's detail does not name the parameter (parameter: "cursor"): ${short(garbage.body)}`,
      )
      // The reference's cursors are signed (x-spec-gap §8): one edited character makes a cursor it never issued.
      for (const cursor of await editedCursors(ctx)) {
        expectError(
          await ctx.http.get(`/v1/tools?limit=5&cursor=${encodeURIComponent(cursor)}`),
          400,
          `a cursor of its own with one character edited (${short(cursor)})`,
          'invalid_cursor',
        )
      }
    },
  },
]
