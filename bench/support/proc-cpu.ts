import { readdirSync, readFileSync } from 'node:fs'

/** CPU seconds a process has used so far (Linux /proc, 10 ms ticks; NaN elsewhere or once the process is gone). */
export function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return Number.NaN
  }
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
