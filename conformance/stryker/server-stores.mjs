/**
 * Where the judged servers keep their SQLite stores: in memory (a directory of its own under /dev/shm, a tmpfs on
 * Linux) when there is one, so a long run writes its throwaway stores to no disk (the suite judges answers alone,
 * never whether a commit reached a disk). Elsewhere the stores stay in the sandbox, as before.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'

const PREFIX = 'agentops-stryker-'
/** A run's directory name: the prefix, its process id, mkdtemp's suffix. */
const RUN_DIR = new RegExp(`^${PREFIX}(\\d+)-`)

/**
 * A directory for this run's server stores under `memory` (default /dev/shm), removed when this process exits, or
 * undefined when `memory` is no writable directory. Directories a run left behind (its process killed before its
 * exit) are removed first: each is named after its run's process id.
 */
export function serverStoresDir(memory = '/dev/shm') {
  try {
    if (!statSync(memory).isDirectory()) return undefined
    removeLeftBehind(memory)
    const dir = mkdtempSync(join(memory, `${PREFIX}${process.pid}-`))
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    return dir
  } catch {
    return undefined
  }
}

/** Removes the directories under `memory` of runs whose process is gone. */
export function removeLeftBehind(memory) {
  for (const name of readdirSync(memory)) {
    const pid = Number(RUN_DIR.exec(name)?.[1])
    if (pid > 0 && !alive(pid)) rmSync(join(memory, name), { recursive: true, force: true })
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: a process of another user has that id; it is alive.
    return err?.code === 'EPERM'
  }
}
