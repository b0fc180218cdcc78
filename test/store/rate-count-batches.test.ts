/**
 * Counting a workspace's concurrent requests together (src/store/repos/rate-count-batches.ts): the figures each
 * request gets are those it would get counted alone, in arrival order; at most one statement per workspace is in
 * flight; a failed statement fails only the requests it counted. A cached GET's version confirmation rides with its
 * workspace's waiting count, never with a statement already sent. PostgreSQL's own exactness across replicas is
 * tested in test/limits/rate-limit-stores.test.ts, the statement's versions in test/store/run-cache.test.ts.
 */
import { describe, expect, it } from 'vitest'
import type { CounterWindow } from '../../src/domain/limits/types.js'
import {
  type BatchCount,
  RateCountBatches,
  RIDERS_MAX,
  shareOut,
} from '../../src/store/repos/rate-count-batches.js'

const windows = (burst: number, hourly: number, start = 0): [CounterWindow, CounterWindow] => [
  { name: 'burst', start, windowMs: 10_000, quota: burst },
  { name: 'hourly', start: 0, windowMs: 3_600_000, quota: hourly },
]

/**
 * The store's statement, in memory: adds a batch the way CONSUME_BATCH does, and reads the versions of the runs it
 * carries as they are when it is sent (its snapshot), each only in its own workspace (`runs`: workspace/run → version).
 */
function memoryStatement(runs = new Map<string, string>()) {
  const counts = new Map<string, number>()
  const calls: number[] = []
  /** The run ids each statement carried, in the order statements were sent. */
  const carried: string[][] = []
  const add = (key: string, n: number) => {
    const next = (counts.get(key) ?? 0) + n
    counts.set(key, next)
    return next
  }
  const countBatch = async (
    workspaceId: string,
    [first, second]: readonly [CounterWindow, CounterWindow],
    n: number,
    runIds: readonly string[],
  ): Promise<BatchCount & { versions: Map<number, string> }> => {
    calls.push(n)
    carried.push([...runIds])
    const versions = new Map<number, string>()
    runIds.forEach((id, i) => {
      const version = runs.get(`${workspaceId}/${id}`)
      if (version !== undefined) versions.set(i, version)
    })
    await new Promise((resolve) => setTimeout(resolve, 5)) // a round trip
    const firstCount = add(`${workspaceId}/${first.name}/${first.start}`, n)
    const passing = Math.min(Math.max(first.quota - (firstCount - n), 0), n)
    const secondKey = `${workspaceId}/${second.name}/${second.start}`
    return {
      firstCount,
      secondCount: passing > 0 ? add(secondKey, passing) : null,
      secondCurrent: counts.get(secondKey) ?? 0,
      versions,
    }
  }
  return { countBatch, calls, carried }
}

/** The statement, failing once with 'connection lost' when `failNext` was called before it is sent. */
function failingOnce(statement: ReturnType<typeof memoryStatement>) {
  let fail = false
  const countBatch: typeof statement.countBatch = async (workspaceId, w, n, runIds) => {
    if (fail) {
      fail = false
      throw new Error('connection lost')
    }
    return statement.countBatch(workspaceId, w, n, runIds)
  }
  return {
    countBatch,
    failNext: () => {
      fail = true
    },
  }
}

/** The figures of requests counted one at a time, the behaviour batches must reproduce. */
function oneAtATime(n: number, burst: number, hourlyBefore = 0, burstBefore = 0): number[][] {
  const figures: number[][] = []
  let b = burstBefore
  let h = hourlyBefore
  for (let i = 0; i < n; i++) {
    b += 1
    if (b <= burst) h += 1
    figures.push([b, h])
  }
  return figures
}

describe('shareOut', () => {
  it('gives a batch the figures of its requests counted one after another', () => {
    // 5 requests after 8 earlier ones, burst quota 10: the first two pass the burst window.
    expect(shareOut(5, 10, { firstCount: 13, secondCount: 42, secondCurrent: 40 })).toEqual([
      [9, 41],
      [10, 42],
      [11, 42],
      [12, 42],
      [13, 42],
    ])
    expect(shareOut(3, 10, { firstCount: 3, secondCount: 3, secondCurrent: 0 })).toEqual(oneAtATime(3, 10))
  })

  it('reports the second window as found when no request of the batch reached it', () => {
    expect(shareOut(2, 10, { firstCount: 14, secondCount: null, secondCurrent: 77 })).toEqual([
      [13, 77],
      [14, 77],
    ])
  })
})

describe('RateCountBatches', () => {
  it('counts requests arriving during a statement together, with the figures of one-at-a-time counting', async () => {
    const statement = memoryStatement()
    const batches = new RateCountBatches(statement.countBatch)
    const figures = await Promise.all(
      Array.from({ length: 30 }, () => batches.consume('ws', windows(12, 100))),
    )
    expect(figures).toEqual(oneAtATime(30, 12))
    // The first request went alone; the other 29 arrived while it was in flight.
    expect(statement.calls).toEqual([1, 29])
  })

  it('keeps one statement in flight per workspace, and workspaces apart', async () => {
    const statement = memoryStatement()
    const batches = new RateCountBatches(statement.countBatch)
    const a = Array.from({ length: 4 }, () => batches.consume('ws_a', windows(3, 100)))
    const b = Array.from({ length: 2 }, () => batches.consume('ws_b', windows(3, 100)))
    expect(await Promise.all(a)).toEqual(oneAtATime(4, 3))
    expect(await Promise.all(b)).toEqual(oneAtATime(2, 3))
    expect(statement.calls).toEqual([1, 1, 3, 1])
    // Later requests find the lane idle again and are counted at once, continuing the same figures.
    expect(await batches.consume('ws_a', windows(3, 100))).toEqual([5, 3])
  })

  it('counts requests of different windows in separate statements', async () => {
    const statement = memoryStatement()
    const batches = new RateCountBatches(statement.countBatch)
    const first = batches.consume('ws', windows(5, 100, 0))
    const waiting = [
      batches.consume('ws', windows(5, 100, 0)),
      batches.consume('ws', windows(5, 100, 10_000)), // the next burst window began meanwhile
      batches.consume('ws', windows(5, 100, 10_000)),
    ]
    expect(await first).toEqual([1, 1])
    expect(await Promise.all(waiting)).toEqual([
      [2, 2],
      [1, 3],
      [2, 4],
    ])
    expect(statement.calls).toEqual([1, 1, 2])
  })

  it('fails only the requests a failed statement was counting, and goes on counting', async () => {
    const statement = failingOnce(memoryStatement())
    const batches = new RateCountBatches(statement.countBatch)
    const first = batches.consume('ws', windows(5, 100))
    statement.failNext()
    const failed = [batches.consume('ws', windows(5, 100)), batches.consume('ws', windows(5, 100))]
    expect(await first).toEqual([1, 1])
    for (const f of failed) await expect(f).rejects.toThrow('connection lost')
    expect(await batches.consume('ws', windows(5, 100))).toEqual([2, 2])
  })

  it("lets a confirmation ride only with the workspace's waiting count, never with a statement already sent", async () => {
    const runs = new Map([
      ['ws_a/run_1', 'v1'],
      ['ws_b/run_2', 'v2'],
    ])
    const statement = memoryStatement(runs)
    const batches = new RateCountBatches(statement.countBatch)
    // An idle lane: the count is sent at once, so nothing is waiting for a confirmation to ride with.
    const inFlight = batches.consume('ws_a', windows(10, 100))
    expect(batches.ride('ws_a', 'run_1')).toBeUndefined()
    // A count waits behind the one in flight: a confirmation rides with it, in the statement sent after it joined.
    const waiting = batches.consume('ws_a', windows(10, 100))
    runs.set('ws_a/run_1', 'v1-changed') // committed after the first statement was sent, before the second
    const ridden = batches.ride('ws_a', 'run_1')
    const again = batches.ride('ws_a', 'run_1')
    // Another workspace's run, asked through this workspace's lane, is not found.
    const foreign = batches.ride('ws_a', 'run_2')
    // No lane at all for this workspace.
    expect(batches.ride('ws_c', 'run_1')).toBeUndefined()
    expect(await inFlight).toEqual([1, 1])
    expect(await waiting).toEqual([2, 2])
    expect(await ridden).toBe('v1-changed')
    expect(await again).toBe('v1-changed')
    expect(await foreign).toBeUndefined()
    // One statement for the count and its riders; the run asked twice went once.
    expect(statement.carried).toEqual([[], ['run_1', 'run_2']])
    // The lane is idle again: a confirmation goes the other way.
    expect(batches.ride('ws_a', 'run_1')).toBeUndefined()
  })

  it('fails the confirmations a failed statement carried, with its error', async () => {
    const statement = failingOnce(memoryStatement(new Map([['ws/run_1', 'v1']])))
    const batches = new RateCountBatches(statement.countBatch)
    const first = batches.consume('ws', windows(5, 100))
    statement.failNext()
    const counted = batches.consume('ws', windows(5, 100))
    const ridden = batches.ride('ws', 'run_1')
    expect(await first).toEqual([1, 1])
    await expect(counted).rejects.toThrow('connection lost')
    await expect(ridden).rejects.toThrow('connection lost')
  })

  it(`carries at most ${RIDERS_MAX} confirmations with one count`, async () => {
    const statement = memoryStatement()
    const batches = new RateCountBatches(statement.countBatch)
    const first = batches.consume('ws', windows(5, 100))
    const second = batches.consume('ws', windows(5, 100))
    const riders = Array.from({ length: RIDERS_MAX }, (_, i) => batches.ride('ws', `run_${i}`))
    expect(riders.every((r) => r !== undefined)).toBe(true)
    expect(batches.ride('ws', 'run_over')).toBeUndefined()
    await Promise.all([first, second, ...riders])
    expect(statement.carried.map((ids) => ids.length)).toEqual([0, RIDERS_MAX])
  })
})
