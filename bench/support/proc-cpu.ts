import { readdirSync, readFileSync } from 'node:fs'

/**
 * The fields of /proc/<pid>/stat after the command name (field 3 onwards: the state first), or undefined once the
 * process is gone or off Linux. The name is in parentheses and may itself hold spaces and parentheses, so the fields
 * start after the last `)`.
 */
function statFields(pid: number | undefined): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    return undefined
  }
}

/** CPU seconds a process has used so far (Linux /proc, 10 ms ticks; NaN elsewhere or once the process is gone). */
export function cpuSeconds(pid: number | undefined): number {
  const fields = statFields(pid)
  // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
  return fields ? (Number(fields[11]) + Number(fields[12])) / 100 : Number.NaN
}

/** A process's parent (field 4 of stat), or undefined once it is gone. */
export function parentPid(pid: number): number | undefined {
  const parent = Number(statFields(pid)?.[1])
  return Number.isInteger(parent) ? parent : undefined
}

/** CPU nanoseconds all threads of a process have run so far (Linux schedstat: no 10 ms tick rounding). */
export function cpuNanoseconds(pid: number): number {
  let total = 0
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // A thread that ended between the listing and the read has no more time to add.
    }
  }
  return total
}
