/**
 * Where the mutation run's judged servers keep their SQLite stores (conformance/stryker/server-stores.mjs): a
 * directory of the run's own under the memory-backed directory, named after the run's process so that one a killed
 * run left behind is removed by the next run, and none where that directory is missing.
 */
import { existsSync, mkdirSync, readdirSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { removeLeftBehind, serverStoresDir } from '../stryker/server-stores.mjs'
import { scratchDir } from './scratch.js'

/** A process id above Linux's largest (pid_max is at most 2^22): no process has it. */
const GONE = 99_999_999

describe('the judged servers’ stores', () => {
  it('go to a directory of this run under the memory directory, none when it is missing', () => {
    const memory = scratchDir('server-stores-')
    const dir = serverStoresDir(memory)
    expect(dir).toBeDefined()
    expect(dirname(dir as string)).toBe(memory)
    expect(basename(dir as string)).toMatch(new RegExp(`^agentops-stryker-${process.pid}-`))
    expect(existsSync(dir as string)).toBe(true)
    expect(serverStoresDir(join(memory, 'missing'))).toBeUndefined()
  })

  it("remove what a run that is gone left behind, and keep a live run's and anything else", () => {
    const memory = scratchDir('server-stores-')
    for (const name of [
      `agentops-stryker-${GONE}-abc123`,
      `agentops-stryker-${process.pid}-def456`,
      'agentops-stryker-notapid-x',
      'someone-elses',
    ])
      mkdirSync(join(memory, name, '.switch-server-1'), { recursive: true })
    removeLeftBehind(memory)
    expect(readdirSync(memory).sort()).toEqual(
      [`agentops-stryker-${process.pid}-def456`, 'agentops-stryker-notapid-x', 'someone-elses'].sort(),
    )
  })
})
