/**
 * Where the judged servers keep their SQLite stores: in memory (a directory of its own under /dev/shm, a tmpfs on
 * Linux) when there is one. A store there commits without writing to a disk and checkpoints without fsync, which on
 * a disk held the committing server now and then for milliseconds; the suite judges answers alone, never whether a
 * commit reached the disk. Elsewhere the stores stay in the sandbox, as before.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'

const PREFIX = 'agentops-stryker-'

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
    const pid = Number(name.startsWith(PREFIX) ? name.slice(PREFIX.length).split('-')[0] : Number.NaN)
    if (Number.isInteger(pid) && pid > 0 && !alive(pid))
      rmSync(join(memory, name), { recursive: true, force: true })
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
