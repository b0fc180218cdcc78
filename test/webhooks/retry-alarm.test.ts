import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { RetryAlarm } from '../../src/domain/outbox/retry-alarm.js'

describe('RetryAlarm', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  function alarm() {
    const rings: number[] = []
    const a = new RetryAlarm(
      () => rings.push(Date.now()),
      () => Date.now(),
    )
    return { a, rings }
  }

  it('rings once for each due time, in time order, whatever order they were scheduled in', () => {
    const { a, rings } = alarm()
    for (const at of [1_000_500, 1_000_100, 1_000_900, 1_000_300, 1_000_700]) a.schedule(at)
    vi.advanceTimersByTime(99)
    expect(rings).toEqual([])
    vi.advanceTimersByTime(1_000)
    expect(rings).toEqual([1_000_100, 1_000_300, 1_000_500, 1_000_700, 1_000_900])
    expect(a.size).toBe(0)
  })

  it('rings once for times that come due together, and sets itself again for a sooner one scheduled later', () => {
    const { a, rings } = alarm()
    a.schedule(1_000_400)
    a.schedule(1_000_400)
    a.schedule(1_000_200) // sooner than the armed time: re-armed
    vi.advanceTimersByTime(200)
    expect(rings).toEqual([1_000_200])
    vi.advanceTimersByTime(200)
    expect(rings).toEqual([1_000_200, 1_000_400])
    expect(a.size).toBe(0)
  })

  it('rings at once for a time already past, and never after clear', () => {
    const { a, rings } = alarm()
    a.schedule(999_000)
    vi.advanceTimersByTime(0)
    expect(rings).toHaveLength(1)
    a.schedule(1_000_050)
    a.clear()
    vi.advanceTimersByTime(10_000)
    expect(rings).toHaveLength(1)
  })

  it('keeps a heap: 1,000 random times come out sorted', () => {
    const { a, rings } = alarm()
    let seed = 7
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed
    }
    const times = Array.from({ length: 1_000 }, () => 1_000_001 + (next() % 100_000))
    for (const at of times) a.schedule(at)
    vi.advanceTimersByTime(100_001)
    const distinct = [...new Set(times)].sort((x, y) => x - y)
    expect(rings).toEqual(distinct)
  })
})
