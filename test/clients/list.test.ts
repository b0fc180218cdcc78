/** `List`, the client's self-paging list, over a fake page source: what it fetches and when it stops. */
import { describe, expect, it } from 'vitest'
import { List, type Page } from '../../client/src/index.js'

/** Pages of `size` from `items`; the cursor is the next index. `openEnded` keeps offering a cursor (a live trace). */
function source(items: number[], size: number, openEnded = false) {
  const asked: (string | undefined)[] = []
  const fetchPage = async (cursor: string | undefined): Promise<Page<number>> => {
    asked.push(cursor)
    const start = Number(cursor ?? 0)
    const data = items.slice(start, start + size)
    const next = start + size
    return {
      data,
      next_cursor: next < items.length || openEnded ? String(Math.min(next, items.length)) : null,
    }
  }
  return { asked, fetchPage }
}

describe('List', () => {
  it('iterates every item, fetching each page once, in order, until next_cursor is null', async () => {
    const { asked, fetchPage } = source([1, 2, 3, 4, 5], 2)
    const seen: number[] = []
    for await (const n of new List(fetchPage)) seen.push(n)
    expect(seen).toEqual([1, 2, 3, 4, 5])
    expect(asked).toEqual([undefined, '2', '4'])
  })

  it('fetches a page only when the loop reaches it', async () => {
    const { asked, fetchPage } = source([1, 2, 3, 4, 5], 2)
    for await (const n of new List(fetchPage)) if (n === 2) break
    expect(asked).toEqual([undefined])
  })

  it('awaits to the first page (fetched once however often awaited), or starts at a given cursor', async () => {
    const { asked, fetchPage } = source([1, 2, 3], 2)
    const list = new List(fetchPage)
    expect(await list).toEqual({ data: [1, 2], next_cursor: '2' })
    expect((await list).data).toEqual([1, 2])
    expect(asked).toEqual([undefined])
    expect(await new List(fetchPage, '2').toArray()).toEqual([3])
  })

  it('stops an open-ended list at its first empty page only when told to', async () => {
    const { asked, fetchPage } = source([1, 2, 3], 2, true)
    expect(await new List(fetchPage, undefined, 'cursor-or-empty').toArray()).toEqual([1, 2, 3])
    expect(asked).toEqual([undefined, '2', '3'])
    const bounded: number[] = []
    for await (const page of new List(fetchPage).pages()) {
      bounded.push(page.data.length)
      if (bounded.length === 5) break
    }
    expect(bounded).toEqual([2, 1, 0, 0, 0])
  })

  it('toArray refuses to grow past max', async () => {
    const { fetchPage } = source([1, 2, 3], 2)
    await expect(new List(fetchPage).toArray({ max: 2 })).rejects.toThrow(RangeError)
    expect(await new List(fetchPage).toArray({ max: 3 })).toEqual([1, 2, 3])
  })
})
