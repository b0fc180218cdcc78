import { join } from 'node:path'
import { testTempDir } from '../../test/support/temp.js'

/**
 * A SQLite URL in a directory of its own, removed with the tests' scratch root (test/support/temp.ts: when this
 * process exits, for a benchmark run by hand). A benchmark's store grows by hundreds of megabytes a run; left
 * behind, a few hundred runs fill a disk.
 */
export function throwawaySqliteUrl(prefix = 'agentops-bench-'): string {
  return `sqlite:${join(testTempDir(prefix), 'bench.db')}`
}
