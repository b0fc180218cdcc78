/**
 * Scratch directories for tests (SQLite stores, logs, reports). Every directory of a run lives under one root: the
 * global setup makes it, hands it on as AGENTOPS_TEST_TMP (every worker and every process a test starts inherit it)
 * and removes it once the run ends, so `npm test` leaves nothing in the system's temporary directory however often
 * it runs. A process started without the variable (a test file run by another runner, a support script run by hand)
 * makes a root of its own, removed when it exits.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const TEST_TMP_VARIABLE = 'AGENTOPS_TEST_TMP'

let ownRoot: string | undefined

/** A new scratch root in the system's temporary directory: the global setup's for a run, or a process's own. */
export function newTestTempRoot(): string {
  return mkdtempSync(join(tmpdir(), 'agentops-tests-'))
}

function root(): string {
  const shared = process.env[TEST_TMP_VARIABLE]
  if (shared) return shared
  if (!ownRoot) {
    const made = newTestTempRoot()
    process.once('exit', () => rmSync(made, { recursive: true, force: true }))
    ownRoot = made
  }
  return ownRoot
}

/** A fresh directory named after `prefix`, under this run's root. */
export function testTempDir(prefix: string): string {
  return mkdtempSync(join(root(), prefix))
}
