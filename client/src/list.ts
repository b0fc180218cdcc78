/** One page of a cursor-paged list, as the API sends it: the items and the cursor of the next page (null at the end). */
export interface Page<T> {
  data: T[]
  next_cursor: string | null
}

/** How a list stops: at `next_cursor: null`, and (for a live run's trace, which always offers a cursor) at an empty page. */
export type StopRule = 'cursor' | 'cursor-or-empty'

/**
 * What every list method returns: `await` it for the first page (`{ data, next_cursor }`), or iterate it with
 * `for await` for every item of every page, each page fetched when the loop reaches it. `pages()` iterates pages;
 * `toArray({ max })` collects items and refuses to grow past `max`.
 */
export class List<T> implements AsyncIterable<T>, PromiseLike<Page<T>> {
  private first: Promise<Page<T>> | undefined

  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
    private readonly start: string | undefined = undefined,
    private readonly stop: StopRule = 'cursor',
  ) {}

  // biome-ignore lint/suspicious/noThenProperty: a list is awaitable for its first page, as Stripe's lists are.
  then<A = Page<T>, B = never>(
    onfulfilled?: ((page: Page<T>) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.first ??= this.fetchPage(this.start)
    return this.first.then(onfulfilled, onrejected)
  }

  /** Every page, from the first (or the `cursor` the list was asked with) to the last. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.start
    for (;;) {
      const page = await this.fetchPage(cursor)
      yield page
      if (page.next_cursor === null) return
      if (this.stop === 'cursor-or-empty' && page.data.length === 0) return
      cursor = page.next_cursor
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data
  }

  /** Every item in one array; throws a RangeError rather than hold more than `max` (default 10,000). */
  async toArray(options: { max?: number } = {}): Promise<T[]> {
    const max = options.max ?? 10_000
    const items: T[] = []
    for await (const item of this) {
      if (items.length === max)
        throw new RangeError(`the list has more than ${max} items; raise max or iterate`)
      items.push(item)
    }
    return items
  }
}
