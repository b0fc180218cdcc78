/**
 * Failures nobody waits for (a change listener, a key watcher, a scheduler pass that throws) are reported to the
 * FailureLog the composition root hands the domain: the server's JSON log, not standard error. One listener that
 * throws still lets the others hear the change.
 */
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { ChangeListeners } from '../../src/domain/changes.js'
import { systemClock } from '../../src/domain/clock.js'
import { createServices } from '../../src/services.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { logLines } from '../support/log-lines.js'
import { testTempDir } from '../support/temp.js'

describe('the failure log', () => {
  it('takes a throwing change listener, and the other listeners still hear the change', () => {
    const failures = { error: vi.fn() }
    const listeners = new ChangeListeners(failures)
    const heard = vi.fn()
    listeners.add(() => {
      throw new Error('listener broke')
    })
    listeners.add(heard)
    listeners.deliver({ kind: 'run', runId: 'run_1' })
    expect(heard).toHaveBeenCalledTimes(1)
    expect(failures.error).toHaveBeenCalledWith(
      { err: new Error('listener broke') },
      'change listener failed',
    )
  })

  it("is the server's log once the services are wired: a JSON error line with the stack", async () => {
    const { logger, lines } = logLines()
    const url = `sqlite:${join(testTempDir('failure-log-'), 'db.sqlite')}`
    const db = await openDb(url)
    try {
      await migrate(db)
      const services = createServices({
        db,
        clock: systemClock,
        config: loadConfig({}, { databaseUrl: url, workers: false }),
        logger,
      })
      services.changes.subscribe(() => {
        throw new Error('listener broke')
      })
      services.changes.publish({ kind: 'run', runId: 'run_1' })
      await vi.waitFor(() => expect(lines.length).toBeGreaterThan(0))
      const line = JSON.parse(lines[0] ?? '{}') as { level: number; msg: string; err?: { stack?: string } }
      expect(line).toMatchObject({ level: 50, msg: 'change listener failed' })
      expect(line.err?.stack).toContain('listener broke')
    } finally {
      await db.close()
    }
  })
})
