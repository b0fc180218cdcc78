/**
 * The store probe behind /readyz: a store that hangs (no error, no answer: a partitioned database) makes the replica
 * not ready once STORE_PROBE_TIMEOUT_MS has passed, not whenever the driver gives up; a shutdown that begins while
 * the store is asked wins.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Readiness, STORE_PROBE_TIMEOUT_MS } from '../../src/observability/readiness.js'

afterEach(() => {
  vi.useRealTimers()
})

describe('the readiness probe', () => {
  it('counts a store that does not answer within the bound as unreachable', async () => {
    vi.useFakeTimers()
    const readiness = new Readiness()
    readiness.ready(() => new Promise(() => {}))
    let report: unknown
    void readiness.check().then((r) => {
      report = r
    })
    await vi.advanceTimersByTimeAsync(STORE_PROBE_TIMEOUT_MS - 1)
    expect(report).toBeUndefined()
    await vi.advanceTimersByTimeAsync(1)
    expect(report).toEqual({ ready: false, status: 'store_unreachable' })
  })

  it('is ready when the store answers within the bound, and shutting down if a shutdown began meanwhile', async () => {
    vi.useFakeTimers()
    const slow = () => new Promise((resolve) => setTimeout(resolve, STORE_PROBE_TIMEOUT_MS / 2))
    const readiness = new Readiness()
    readiness.ready(slow)
    const answered = readiness.check()
    await vi.advanceTimersByTimeAsync(STORE_PROBE_TIMEOUT_MS / 2)
    expect(await answered).toEqual({ ready: true, status: 'ready' })

    const during = readiness.check()
    readiness.draining()
    await vi.advanceTimersByTimeAsync(STORE_PROBE_TIMEOUT_MS / 2)
    expect(await during).toEqual({ ready: false, status: 'shutting_down' })
  })
})
