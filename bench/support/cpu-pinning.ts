/**
 * The cores of a bench run: the server under measurement on a core of its own, and everything else (this process,
 * where autocannon runs, and whatever it starts: PostgreSQL, its backends) on the others. Left to the scheduler,
 * a server and its load generator land on the same or on different cores from one process to the next, and a
 * server's CPU per request settles at a different level for its whole life: 27 to 43 µs per PostgreSQL GET across
 * eight fresh processes of the same code (bench/http.ts's README section). Pinned, every side of a run gets the same
 * core to itself, and a database's work stays off it, as it would on a deployment where the database is elsewhere.
 *
 * Linux only (taskset, from util-linux), and only with at least two cores; elsewhere nothing is pinned.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'

export interface CpuPlan {
  /** The core list a server child is started on (taskset's -c form), or undefined when nothing is pinned. */
  server: string | undefined
  /** This process and its later children. */
  rest: string | undefined
}

/** The machine's cores; not availableParallelism(), which counts only those this process may use once pinned. */
function coreCount(): number {
  return cpus().length
}

const UNPINNED: CpuPlan = { server: undefined, rest: undefined }

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** Pins this process (all its threads) to every core but the first, and returns the plan; unpinned if it cannot. */
export function pinBenchProcess(enabled: boolean): CpuPlan {
  const cores = coreCount()
  if (!enabled || process.platform !== 'linux' || cores < 2 || !hasTaskset()) return UNPINNED
  const plan = { server: '0', rest: cores === 2 ? '1' : `1-${cores - 1}` }
  execFileSync('taskset', ['-a', '-p', '-c', plan.rest, String(process.pid)], { stdio: 'ignore' })
  return plan
}

/** Every core, for this process (all its threads) and the processes `pids` (all theirs): placement back to the scheduler. */
export function releaseCores(pids: readonly (number | undefined)[]): void {
  const all = `0-${coreCount() - 1}`
  for (const pid of [process.pid, ...pids]) {
    if (pid === undefined) continue
    try {
      execFileSync('taskset', ['-a', '-p', '-c', all, String(pid)], { stdio: 'ignore' })
    } catch {
      // Gone already.
    }
  }
}

/** The command and arguments that start `command` on `cores` (taskset execs it: the pid is the command's). */
export function onCores(
  cores: string | undefined,
  command: string,
  args: readonly string[],
): [string, string[]] {
  return cores === undefined ? [command, [...args]] : ['taskset', ['-c', cores, command, ...args]]
}

/**
 * Moves a local PostgreSQL (its postmaster, so later backends too, and every process it runs now) to `cores`;
 * `undefined` gives it every core. Reached through the server itself (pg_stat_activity's process ids, the
 * postmaster as their parent), so nothing else on the machine is touched; a server out of reach (a container's
 * process ids) is left where it is.
 */
export async function moveDatabase(adminUrl: string, cores: string | undefined): Promise<void> {
  const { default: postgres } = await import('postgres')
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<{ pid: number }[]>`SELECT pid FROM pg_stat_activity`
    const pids = new Set(rows.map((r) => Number(r.pid)))
    const parent = parentOf(Number(rows[0]?.pid))
    if (parent !== undefined) pids.add(parent)
    const list = cores ?? `0-${coreCount() - 1}`
    for (const pid of pids) {
      try {
        execFileSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' })
      } catch {
        // Not ours to move (another namespace), or gone since the listing.
      }
    }
  } finally {
    await sql.end()
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 4, after the command name in parentheses (which may itself hold spaces).
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
  } catch {
    return undefined
  }
}
