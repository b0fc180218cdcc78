/**
 * The cores of a bench run: the server under measurement on a core of its own, and everything else (this process,
 * where autocannon runs, and whatever it starts: PostgreSQL, its backends) on the others. Left to the scheduler,
 * the database's backends and the load generator take turns on the server's core, and a server's CPU per request
 * can settle at a different level for its whole life: 28.4 to 39.4 µs per PostgreSQL GET across eight fresh
 * processes of the same code (bench/process-spread.ts). Pinned, every side of a run gets the same core to itself,
 * and a database's work stays off it, as it would on a deployment where the database is another machine.
 *
 * Linux only (taskset, from util-linux), and only with at least two cores allowed; elsewhere nothing is pinned.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { parentPid } from './proc-cpu.js'

export interface CpuPlan {
  /** The core list a server child is started on (taskset's -c form), or undefined when nothing is pinned. */
  server: string | undefined
  /** This process and its later children. */
  rest: string | undefined
}

/**
 * The cores this process may run on, as taskset reports them when the module loads (before any pinning): a
 * container's cpuset may allow only some of the machine's. Undefined when taskset cannot say.
 */
function allowedCores(): number[] | undefined {
  try {
    const out = execFileSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8' })
    const list = out.slice(out.lastIndexOf(':') + 1).trim()
    const cores: number[] = []
    for (const part of list.split(',')) {
      const [from, to] = part.split('-').map(Number)
      if (from === undefined || Number.isNaN(from)) return undefined
      for (let c = from; c <= (to ?? from); c++) cores.push(c)
    }
    return cores
  } catch {
    return undefined
  }
}

const ALLOWED = process.platform === 'linux' ? allowedCores() : undefined

const UNPINNED: CpuPlan = { server: undefined, rest: undefined }

/** Pins this process (all its threads) to every core but the first, and returns the plan; unpinned if it cannot. */
export function pinBenchProcess(enabled: boolean): CpuPlan {
  if (!enabled || ALLOWED === undefined || ALLOWED.length < 2) return UNPINNED
  const [first, ...others] = ALLOWED
  const plan = { server: String(first), rest: others.join(',') }
  try {
    execFileSync('taskset', ['-a', '-p', '-c', plan.rest, String(process.pid)], { stdio: 'ignore' })
  } catch {
    // Reading the affinity worked but setting it did not (a sandbox that forbids it): nothing is pinned.
    return UNPINNED
  }
  return plan
}

/** Every core again for this process (all its threads), and so for what it starts next. */
export function releaseBenchProcess(): void {
  if (ALLOWED)
    execFileSync('taskset', ['-a', '-p', '-c', ALLOWED.join(','), String(process.pid)], { stdio: 'ignore' })
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
 * Gives a PostgreSQL cluster of this machine's own binaries every core again: its postmaster (so later backends
 * too) and every process it runs now, started on this process's cores. Reached through the server itself
 * (pg_stat_activity's process ids, the postmaster as their parent), and only processes named `postgres` are moved.
 * Not for a container's server, whose process ids are another namespace's.
 */
export async function releaseDatabase(adminUrl: string): Promise<void> {
  const { default: postgres } = await import('postgres')
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<{ pid: number }[]>`SELECT pid FROM pg_stat_activity`
    const pids = new Set(rows.map((r) => Number(r.pid)))
    const parent = parentPid(Number(rows[0]?.pid))
    if (parent !== undefined) pids.add(parent)
    const list = ALLOWED?.join(',')
    if (list === undefined) return
    for (const pid of pids) {
      // Only PostgreSQL's own processes: ids from another namespace may name anything here.
      if (!isPostgres(pid)) continue
      try {
        execFileSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' })
      } catch {
        // Gone since the listing.
      }
    }
  } finally {
    await sql.end()
  }
}

function isPostgres(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')
  } catch {
    return false
  }
}
