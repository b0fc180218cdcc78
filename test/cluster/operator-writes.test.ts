/**
 * `agentops keys create` / `keys revoke` next to a SQLite server that commits back to back (a run queue draining,
 * ingest): the operator's writes get the write lock instead of sleeping through every gap until "database is
 * locked" (src/store/sqlite-operators.ts). The operator here is the CLI's own code in this process, so the time
 * measured is the store's, not a CLI process's start.
 */

import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { systemClock } from '../../src/domain/clock.js'
import { KeyService } from '../../src/domain/keys/service.js'
import { openDb } from '../../src/store/db.js'
import { createRepositories } from '../../src/store/repos/index.js'
import { issueToken, startReplica } from '../support/cluster.js'

const LOAD = fileURLToPath(new URL('../support/write-load.ts', import.meta.url))

describe('operator writes on a busy SQLite server', () => {
  it('issue and revoke keys while the server drains runs and ingests', async () => {
    const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'agentops-operator-')), 'db.sqlite')}`
    const token = await issueToken(databaseUrl, [
      '--workspace',
      'busy',
      '--limit-per-hour',
      '100000000',
      '--burst-limit',
      '10000000',
    ])
    const replica = await startReplica(0, databaseUrl)
    // The load comes from another process: this one blocks while its BEGIN waits for the lock, as the CLI does.
    const load = spawn(process.execPath, ['--import', 'tsx', LOAD, replica.url, token], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    try {
      await new Promise<void>((resolve, reject) => {
        load.stdout.on('data', (d: Buffer) => {
          if (d.toString().includes('loading')) resolve()
        })
        load.once('exit', (code) => reject(new Error(`the load ended early (${code})`)))
      })
      await new Promise((r) => setTimeout(r, 1000))

      const db = await openDb(databaseUrl, { operator: true })
      try {
        const keys = new KeyService(
          createRepositories(db).keys,
          createRepositories(db).workspaces,
          systemClock,
        )
        const took: number[] = []
        for (let i = 0; i < 3; i++) {
          const began = performance.now()
          const issued = await keys.issue({ workspace: 'ops' })
          expect(await keys.revoke(issued.key_id)).toBeTruthy()
          took.push(Math.round(performance.now() - began))
        }
        console.log(`operator issue + revoke under load: ${took.join(', ')} ms`)
      } finally {
        await db.close()
      }
    } finally {
      load.kill('SIGKILL')
      replica.kill('SIGTERM')
      await replica.exited
    }
  }, 120_000)
})
