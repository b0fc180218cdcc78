import { execFileSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import type { TestProject } from 'vitest/node'
import { type PostgresServer, startPostgres } from './postgres.js'
import { newTestTempRoot, TEST_TMP_VARIABLE } from './temp.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the shared test PostgreSQL server, or null when none could be started. */
    postgresUrl: string | null
    postgresUnavailableReason: string | null
  }
}

let server: PostgresServer | undefined
let scratch: string | undefined

export async function setup(project: TestProject): Promise<void> {
  // The run's scratch root (test/support/temp.ts): set before any worker starts, so every worker inherits it.
  scratch = newTestTempRoot()
  process.env[TEST_TMP_VARIABLE] = scratch
  // Tests that spawn bin/agentops.mjs run the compiled server, and the client tests read client/dist: rebuild each
  // first when a source is newer (once here, so no test rebuilds a file another test reads meanwhile).
  execFileSync(process.execPath, ['scripts/build.mjs', '--if-stale', '--with-client'], {
    cwd: new URL('../..', import.meta.url),
    stdio: 'inherit',
  })
  if (process.env.AGENTOPS_TEST_POSTGRES_URL) {
    project.provide('postgresUrl', process.env.AGENTOPS_TEST_POSTGRES_URL)
    project.provide('postgresUnavailableReason', null)
    return
  }
  try {
    server = await startPostgres()
    project.provide('postgresUrl', server.url)
    project.provide('postgresUnavailableReason', null)
  } catch (err) {
    // CI sets AGENTOPS_REQUIRE_POSTGRES=1 so a missing server is a failure there, not a skip.
    if (process.env.AGENTOPS_REQUIRE_POSTGRES === '1') throw err
    project.provide('postgresUrl', null)
    project.provide('postgresUnavailableReason', (err as Error).message)
  }
}

export async function teardown(): Promise<void> {
  await server?.stop()
  if (scratch) rmSync(scratch, { recursive: true, force: true })
}
