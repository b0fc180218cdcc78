/**
 * What metrics and the request log cost, paired over real HTTP: two reference servers (bench/http-targets.ts, each
 * in its own process on its own SQLite store) run side by side, one as deployed (metrics on, one JSON log line per
 * request on its stdout, drained here as a log collector would) and one with AGENTOPS_METRICS=off and
 * AGENTOPS_LOG_LEVEL=silent, twice each (started on, off, off, on). autocannon drives each pair in alternating short
 * blocks (the order flips every round), so
 * whatever else loads the machine loads both alike. Per block: req/s, and the server's CPU time per request from
 * /proc (steadier than req/s on a shared machine). Prints the medians and the median of the paired ratios.
 *
 *   npm run bench:observability -- [--rounds N] [--seconds S] [--route get|post]
 */
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import type { TargetInfo } from './http-targets.js'
import { startServerChild, stopServerChildren } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback
}
const rounds = Math.min(50, Math.max(1, Number(option('--rounds', '8'))))
const seconds = Math.min(30, Math.max(1, Number(option('--seconds', '3'))))
const routes = option('--route', 'get,post').split(',')
const CONNECTIONS = 50

async function start(observability: boolean): Promise<TargetInfo & { pid: number }> {
  const { child, ...info } = await startServerChild<TargetInfo>({
    script: 'http-targets.ts',
    args: ['reference'],
    name: 'a target',
    env: {
      AGENTOPS_LOG_LEVEL: observability ? 'info' : 'silent',
      AGENTOPS_METRICS: observability ? 'on' : 'off',
    },
  })
  return { ...info, pid: child.pid ?? 0 }
}

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / 100
}

function requests(t: TargetInfo, route: string): autocannon.Request[] {
  const headers = { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' }
  return route === 'get'
    ? [{ method: 'GET', path: `/v1/runs/${t.runId}`, headers }]
    : [
        {
          method: 'POST',
          path: '/v1/agents',
          headers,
          body: '{"name":"bench","behavior":"autonomous","capabilities":["a"]}',
        },
      ]
}

async function block(t: TargetInfo & { pid: number }, route: string, s: number) {
  const before = cpuSeconds(t.pid)
  const r = (await autocannon({
    url: t.url,
    connections: CONNECTIONS,
    duration: s,
    requests: requests(t, route),
  })) as autocannon.Result
  const cpuUs = ((cpuSeconds(t.pid) - before) * 1e6) / Math.max(1, r.requests.total)
  return { rps: r.requests.average, cpuUs, non2xx: r.non2xx }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN

// Started A B B A: the process started first measured a steadier 8-15 % dearer than its twin in A/A runs on a
// loaded machine, so each side has one early and one late process and each pair is (early on, late off) or the reverse.
const onFirst = await start(true)
const offFirst = await start(false)
const offLast = await start(false)
const onLast = await start(true)
const pairs = [
  [onFirst, offLast],
  [onLast, offFirst],
] as const
console.log(
  `bench:observability — ${rounds} rounds of ${seconds} s per side and route, ${CONNECTIONS} connections, alternating`,
)
for (const route of routes) {
  for (const t of [onFirst, offFirst, offLast, onLast]) await block(t, route, 2)
  const sides = { on: [] as { rps: number; cpuUs: number }[], off: [] as { rps: number; cpuUs: number }[] }
  let problems = 0
  for (let r = 0; r < rounds; r++) {
    for (const [on, off] of pairs) {
      const order = r % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)
      for (const side of order) {
        const b = await block(side === 'on' ? on : off, route, seconds)
        problems += b.non2xx
        sides[side].push(b)
      }
    }
  }
  const cpuRatio = median(sides.on.map((b, i) => b.cpuUs / (sides.off[i]?.cpuUs ?? Number.NaN)))
  const rpsRatio = median(sides.on.map((b, i) => b.rps / (sides.off[i]?.rps ?? Number.NaN)))
  const label = route === 'get' ? 'GET /v1/runs/{id}' : 'POST /v1/agents'
  console.log(
    `${label.padEnd(20)} on: ${median(sides.on.map((b) => b.rps)).toFixed(0)} req/s, ${median(sides.on.map((b) => b.cpuUs)).toFixed(0)} µs CPU/req   off: ${median(sides.off.map((b) => b.rps)).toFixed(0)} req/s, ${median(sides.off.map((b) => b.cpuUs)).toFixed(0)} µs CPU/req   paired: CPU/req ${((cpuRatio - 1) * 100).toFixed(1)}%, req/s ${((rpsRatio - 1) * 100).toFixed(1)}%${problems ? `  (non-2xx ${problems})` : ''}`,
  )
}
stopServerChildren()
