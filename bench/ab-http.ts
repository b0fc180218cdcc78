/**
 * Two checkouts' reference servers, one request shape, alternated: what a change on the request path costs or saves,
 * to the few per cent. Each server runs as bench:http's `reference` target (./http-targets.ts: the compiled build,
 * metrics and request log on, SQLite), both pinned to the same core, loaded one at a time by autocannon from this
 * process (50 connections), the order alternating each round; a round's figure is the server's CPU per request
 * (schedstat, all threads), and the verdict the median of the rounds' ratios. Run it with the same checkout on both
 * sides to see its spread on the machine of the day.
 *
 *   npx tsx bench/ab-http.ts <checkout A> <checkout B> [--rounds N] [--seconds S] [--route post|get]
 *
 * `post` is POST /v1/agents with a fresh Idempotency-Key each time (bench:http's keyed POST), `get` a cached
 * GET /v1/runs/{id}.
 */
import { resolve } from 'node:path'
import autocannon from 'autocannon'
import type { TargetInfo } from './http-targets.js'
import { cpuNanoseconds } from './support/proc-cpu.js'
import { keyedAgentCreate, median, runRead } from './support/requests.js'
import { startServerChild, stopServerChildren } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback
}
const roots = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'))
if (roots.length !== 2) {
  console.error(
    'usage: npx tsx bench/ab-http.ts <checkout A> <checkout B> [--rounds N] [--seconds S] [--route post|get]',
  )
  process.exit(2)
}
const rounds = Math.max(2, Number(option('--rounds', '8')))
const seconds = Math.max(1, Number(option('--seconds', '3')))
const route = option('--route', 'post') === 'get' ? 'get' : 'post'

const sides = await Promise.all(
  roots.map((root, i) =>
    startServerChild<TargetInfo>({
      script: 'http-targets.ts',
      args: ['reference'],
      root: resolve(root),
      cpus: '0',
      name: `side ${'AB'[i]}`,
    }),
  ),
)

function load(side: TargetInfo, duration: number): Promise<autocannon.Result> {
  return autocannon({
    url: side.url,
    connections: 50,
    duration,
    requests: [route === 'post' ? keyedAgentCreate(side) : runRead(side)],
  })
}

const cpu: number[][] = [[], []]
const rates: number[][] = [[], []]
for (const side of sides) await load(side, 2)
for (let r = 0; r < rounds; r++) {
  for (const i of r % 2 === 0 ? [0, 1] : [1, 0]) {
    const side = sides[i] as (typeof sides)[number]
    const before = cpuNanoseconds(side.child.pid ?? 0)
    const result = await load(side, seconds)
    const used = cpuNanoseconds(side.child.pid ?? 0) - before
    if (result.non2xx > 0) throw new Error(`side ${'AB'[i]} answered ${result.non2xx} requests with no 2xx`)
    cpu[i]?.push(used / 1000 / result.requests.total)
    rates[i]?.push(result.requests.average)
  }
}
stopServerChildren()

const [a, b] = cpu as [number[], number[]]
for (const [i, name] of ['A', 'B'].entries()) {
  const own = cpu[i] ?? []
  console.log(
    `${name} ${roots[i]}: ${median(rates[i] ?? []).toFixed(0)} req/s, CPU ${median(own).toFixed(1)} µs/req (rounds ${own.map((x) => x.toFixed(0)).join(' / ')})`,
  )
}
const ratios = a.map((x, k) => x / (b[k] ?? Number.NaN))
console.log(
  `${route} CPU per request A / B: ${median(ratios).toFixed(3)} (rounds ${ratios.map((x) => x.toFixed(3)).join(' / ')})`,
)
process.exit(0)
