/**
 * Sums a V8 `.cpuprofile` (node --cpu-prof) per function, per file or per package: self time (the samples whose
 * top frame it is) and inclusive time (the samples it is anywhere on the stack of, counted once however deep it
 * recurses), optionally only within time windows (the measured load, without start-up and warm-up) and divided by
 * the requests answered in them.
 */
import { readFileSync } from 'node:fs'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}
interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

/** A window of V8's monotonic clock in microseconds (the same clock as `process.hrtime` on Linux). */
export interface Window {
  fromUs: number
  toUs: number
}

export type Grouping = 'function' | 'file' | 'package'

export interface Row {
  key: string
  selfUs: number
  totalUs: number
}

export interface Summary {
  /** Sampled time in the windows, idle excluded. */
  busyUs: number
  rows: Row[]
}

/** A short, stable name for a script URL: `src/…`, `node_modules/<pkg>/…`, `node:…`, or the native pseudo-frames. */
function shortFile(url: string): string {
  if (url === '') return '(native)'
  const modules = url.lastIndexOf('/node_modules/')
  if (modules >= 0) return url.slice(modules + 1)
  const src = url.search(/\/(src|bench)\//)
  if (src >= 0) return url.slice(src + 1)
  return url.replace(/^file:\/\//, '')
}

function packageOf(url: string): string {
  if (url === '') return '(native)'
  if (url.startsWith('node:')) return 'node:internal'
  const modules = url.lastIndexOf('/node_modules/')
  if (modules >= 0) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/')
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url)
  }
  const src = url.match(/\/(src|bench)\/([^/]+)\//)
  return src ? `${src[1]}/${src[2]}` : shortFile(url)
}

function keyOf(frame: CallFrame, grouping: Grouping): string {
  if (frame.url === '' && frame.functionName.startsWith('(')) return frame.functionName // (garbage collector) etc.
  if (grouping === 'package') return packageOf(frame.url)
  if (grouping === 'file') return shortFile(frame.url)
  return `${frame.functionName || '(anonymous)'} ${shortFile(frame.url)}:${frame.lineNumber + 1}`
}

export function summarise(path: string, grouping: Grouping, windows?: readonly Window[]): Summary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const self = new Map<string, number>()
  const total = new Map<string, number>()
  let busyUs = 0
  let at = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0
    // A sample stands for the time until the next one.
    const weight = profile.timeDeltas[i + 1] ?? 0
    if (windows && !windows.some((w) => at >= w.fromUs && at < w.toUs)) continue
    const top = byId.get(profile.samples[i] as number)
    if (!top || top.callFrame.functionName === '(idle)') continue
    busyUs += weight
    const topKey = keyOf(top.callFrame, grouping)
    self.set(topKey, (self.get(topKey) ?? 0) + weight)
    const seen = new Set<string>()
    for (let id: number | undefined = top.id; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id)
      if (!node || node.callFrame.functionName === '(root)') continue
      const key = keyOf(node.callFrame, grouping)
      if (seen.has(key)) continue
      seen.add(key)
      total.set(key, (total.get(key) ?? 0) + weight)
    }
  }
  const rows = [...total.entries()].map(([key, totalUs]) => ({ key, totalUs, selfUs: self.get(key) ?? 0 }))
  return { busyUs, rows }
}

/** Prints the top rows by self and by inclusive time, in µs per request. */
export function printSummary(title: string, summary: Summary, requests: number, top = 25): void {
  const per = (us: number) => (us / requests).toFixed(2).padStart(8)
  console.log(`\n== ${title}: ${per(summary.busyUs).trim()} µs busy per request (${requests} requests)`)
  const bySelf = [...summary.rows].sort((a, b) => b.selfUs - a.selfUs).slice(0, top)
  console.log('  self µs/req   total µs/req')
  for (const r of bySelf) console.log(`  ${per(r.selfUs)}   ${per(r.totalUs)}   ${r.key}`)
}

// As a script: npx tsx bench/support/cpuprofile.ts <file.cpuprofile> [function|file|package] [requests] [top]
if (process.argv[1]?.endsWith('cpuprofile.ts')) {
  const [file, grouping = 'function', requests = '1', top = '40'] = process.argv.slice(2)
  if (!file)
    throw new Error('usage: cpuprofile.ts <file.cpuprofile> [function|file|package] [requests] [top]')
  printSummary(file, summarise(file, grouping as Grouping), Number(requests), Number(top))
}

/** The functions (or files, packages) whose self time per request differs most between two summaries. */
export function printDifference(
  title: string,
  a: Summary,
  aRequests: number,
  b: Summary,
  bRequests: number,
  top = 40,
): void {
  const self = new Map<string, [number, number]>()
  for (const r of a.rows) self.set(r.key, [r.selfUs / aRequests, 0])
  for (const r of b.rows) self.set(r.key, [self.get(r.key)?.[0] ?? 0, r.selfUs / bRequests])
  const rows = [...self.entries()].sort((x, y) => y[1][0] - y[1][1] - (x[1][0] - x[1][1])).slice(0, top)
  const f = (n: number) => n.toFixed(2).padStart(7)
  console.log(
    `\n== ${title}: busy ${f(a.busyUs / aRequests).trim()} against ${f(b.busyUs / bRequests).trim()} µs/req`,
  )
  console.log('  self µs/req: A       B    A − B')
  for (const [key, [x, y]] of rows) console.log(`          ${f(x)} ${f(y)} ${f(x - y)}   ${key}`)
}
