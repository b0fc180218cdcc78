/**
 * bench:observability's `--a-floor` compares the reference server's observation with bench/support/floor-observer.ts,
 * the least any implementation must do. The comparison only means something while the floor writes the same line
 * (the reference log's fields) and counts every request: held here.
 */
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { FloorObserver } from '../../bench/support/floor-observer.js'
import type { RequestObservation } from '../../src/surface/observe.js'
import { testTempDir } from '../support/temp.js'
import { REQUEST_LOG_FIELDS } from './helpers.js'

const observation = (i: number, durationMs: number): RequestObservation => ({
  method: 'GET',
  route: '/v1/runs/{run_id}',
  status: 200,
  durationMs,
  requestId: `req_${i}`,
  workspaceId: 'ws_1',
  keyId: 'key_1',
  errorCode: undefined,
})

describe('the floor observer', () => {
  it("writes the reference request log's fields, a whole JSON line per request across batches", () => {
    const path = join(testTempDir('floor-'), 'lines')
    const fd = openSync(path, 'w')
    const floor = new FloorObserver(fd)
    const requests = 500 // about seven 16 kB batches
    for (let i = 0; i < requests; i++) {
      floor.requestStarted()
      floor.request(observation(i, 3))
    }
    floor.flush()
    closeSync(fd)
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n')
    expect(lines).toHaveLength(requests)
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    for (const line of parsed) expect(Object.keys(line).sort()).toEqual(REQUEST_LOG_FIELDS)
    expect(parsed.map((l) => l.req_id)).toEqual(Array.from({ length: requests }, (_, i) => `req_${i}`))
    expect(parsed[0]).toMatchObject({
      method: 'GET',
      route: '/v1/runs/{run_id}',
      status: 200,
      duration_ms: 3,
    })
    expect(floor.inFlight).toBe(0)
  })

  it('counts each latency once, in the first bucket at or above it, and sums the seconds', () => {
    const fd = openSync(join(testTempDir('floor-'), 'lines'), 'w')
    const floor = new FloorObserver(fd)
    floor.request(observation(1, 3)) // 0.003 s: the 0.005 bucket
    floor.request(observation(2, 5)) // exactly on a bound: that bucket
    floor.request(observation(3, 60_000)) // above the last bound: +Inf
    floor.flush()
    closeSync(fd)
    const row = floor.rows.get('/v1/runs/{run_id}')?.get('GET')
    if (!row) throw new Error('no row for the route')
    const twoXx = Array.from(row.subarray(row.length / 5, (row.length / 5) * 2))
    const counts = twoXx.slice(0, -1)
    expect(counts.reduce((a, b) => a + b, 0)).toBe(3)
    expect(counts[3]).toBe(2) // le=0.005
    expect(counts[counts.length - 1]).toBe(1) // +Inf
    expect(twoXx[twoXx.length - 1]).toBeCloseTo(0.003 + 0.005 + 60, 9)
  })
})
