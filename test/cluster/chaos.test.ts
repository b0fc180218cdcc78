/**
 * A few kill -9 cycles under keyed POSTs, runs and ingest on each store (`npm run chaos` runs more): every
 * acknowledged write is there once, every replay is byte-identical, every retried unanswered key gives one resource.
 */
import { describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'
import { runChaos } from '../support/chaos.js'

describe.each(backends())('kill -9 loops on $name', (backend) => {
  it('keep every promise of an Idempotency-Key', async () => {
    const report = await runChaos({
      databaseUrl: await backend.freshUrl(),
      cycles: 3,
      clients: 6,
      loadMs: [300, 700],
    })
    expect(report.violations).toEqual([])
    expect(report.answered).toBeGreaterThan(0)
    expect(report.replays).toBe(report.answered + report.unanswered)
  }, 180_000)
})
