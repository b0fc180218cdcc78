import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { testTempDir } from '../support/temp.js'

const CHILD = fileURLToPath(new URL('../support/close-store.ts', import.meta.url))

describe('closing a SQLite store whose checkpoints run in a worker thread', () => {
  it('finishes with nothing else alive: the wait for the last checkpoint keeps the process up', async () => {
    const file = join(testTempDir('close-'), 'db.sqlite')
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString()
    })
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
    // Before the fix: exit code 13 (an unsettled top-level await) and no "closed", every time.
    expect({ code, output: output.trim() }).toEqual({ code: 0, output: 'closed' })
  }, 30_000)
})
