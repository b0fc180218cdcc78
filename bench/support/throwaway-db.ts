import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A SQLite URL in a directory of its own under the system's temporary directory, removed when this process exits
 * (a benchmark's store grows by hundreds of megabytes a run; left behind, a few hundred runs fill a disk).
 */
export function throwawaySqliteUrl(prefix = 'agentops-bench-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  return `sqlite:${join(dir, 'bench.db')}`
}
