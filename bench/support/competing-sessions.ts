/**
 * Other sessions that compete for the CPU at full weight while a benchmark runs. Linux's autogroup scheduling
 * (`/proc/sys/kernel/sched_autogroup_enabled`) shares the CPU between sessions first, evenly whatever the `nice` of
 * the processes inside each: `nice -n 19` only orders the processes of one session. A helper's or a CI run's session
 * busy beside a benchmark therefore takes its full share of the core the servers were given, however niced its
 * commands are; its group's own nice (`echo 19 > /proc/<pid>/autogroup`, inherited by the session's later commands)
 * leaves it idle time only. docs/performance.md (2026-11-30) has the figures that showed it.
 */
import { readdirSync, readFileSync } from 'node:fs'

/** A process's autogroup as /proc/<pid>/autogroup prints it: `/autogroup-48 nice 19`. */
export interface Autogroup {
  name: string
  nice: number
}

export function parseAutogroup(text: string): Autogroup | undefined {
  const m = /^(\/autogroup-\d+)\s+nice\s+(-?\d+)\s*$/.exec(text.trim())
  return m ? { name: m[1] as string, nice: Number(m[2]) } : undefined
}

/** One process as sampled: its group, its CPU so far in clock ticks, and what it runs. */
export interface ProcessSample {
  pid: number
  group: Autogroup
  ticks: number
  command: string
}

/** A session that used CPU between two samples at a group nice below 19. */
export interface BusySession {
  group: string
  nice: number
  /** Share of one core used between the samples. */
  share: number
  /** A process of the session, to set the group's nice through. */
  pid: number
  command: string
}

/**
 * The sessions other than `own` that used more than `minShare` of a core between `before` and `after`
 * (`elapsedTicks` apart), busiest first. A group already at nice 19 is left out: it gets idle time only.
 */
export function busySessions(
  before: readonly ProcessSample[],
  after: readonly ProcessSample[],
  elapsedTicks: number,
  own: string | undefined,
  minShare = 0.05,
): BusySession[] {
  const earlier = new Map(before.map((p) => [p.pid, p.ticks]))
  const groups = new Map<string, BusySession & { busiest: number; ticks: number }>()
  for (const p of after) {
    if (p.group.name === own || p.group.nice >= 19) continue
    const used = p.ticks - (earlier.get(p.pid) ?? p.ticks)
    const g = groups.get(p.group.name) ?? {
      group: p.group.name,
      nice: p.group.nice,
      share: 0,
      pid: p.pid,
      command: p.command,
      busiest: -1,
      ticks: 0,
    }
    g.ticks += used
    if (used > g.busiest) Object.assign(g, { busiest: used, pid: p.pid, command: p.command })
    groups.set(p.group.name, g)
  }
  return [...groups.values()]
    .map(({ busiest: _busiest, ticks, ...g }) => ({ ...g, share: ticks / elapsedTicks }))
    .filter((g) => g.share > minShare)
    .sort((a, b) => b.share - a.share)
}

const TICKS_PER_SECOND = 100

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

function sampleProcesses(): ProcessSample[] {
  const out: ProcessSample[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const group = parseAutogroup(read(`/proc/${entry}/autogroup`) ?? '')
    const stat = read(`/proc/${entry}/stat`)
    if (!group || !stat) continue
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const command = (read(`/proc/${entry}/cmdline`) ?? '').replaceAll('\0', ' ').trim().slice(0, 80)
    out.push({ pid: Number(entry), group, ticks: Number(fields[11]) + Number(fields[12]), command })
  }
  return out
}

/**
 * Samples every process twice, `sampleMs` apart, when the kernel schedules by autogroup; otherwise (or off Linux)
 * answers an empty list at once.
 */
export async function competingSessions(sampleMs = 1000): Promise<BusySession[]> {
  if (read('/proc/sys/kernel/sched_autogroup_enabled')?.trim() !== '1') return []
  const own = parseAutogroup(read('/proc/self/autogroup') ?? '')?.name
  const before = sampleProcesses()
  await new Promise((resolve) => setTimeout(resolve, sampleMs))
  return busySessions(before, sampleProcesses(), (sampleMs / 1000) * TICKS_PER_SECOND, own)
}

/** The warning a benchmark prints before it measures, or undefined when no other session competes. */
export function competingSessionsWarning(busy: readonly BusySession[]): string | undefined {
  if (busy.length === 0) return undefined
  const list = busy
    .map(
      (b) =>
        `${b.group} (nice ${b.nice}) ${(b.share * 100).toFixed(0)} % of a core, e.g. pid ${b.pid} ${b.command}`,
    )
    .join('; ')
  const pids = busy.map((b) => b.pid).join(' ')
  return `warning: other sessions compete at full weight (autogroup scheduling: their processes' nice does not lower it): ${list}. For idle time only: for p in ${pids}; do echo 19 > /proc/$p/autogroup; done`
}
