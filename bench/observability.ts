/**
 * What metrics and the request log cost, paired over real HTTP: side A is the reference server as deployed
 * (metrics on, one JSON log line per request on its stdout, drained here as a log collector would), side B the same
 * with AGENTOPS_METRICS=off and AGENTOPS_LOG_LEVEL=silent. Each side runs as two processes (bench/http-targets.ts,
 * each on its own SQLite store), started A B B A so each side has an early and a late one.
 *
 * Every round drives all four processes once with autocannon, in short blocks whose order rotates from round to
 * round (every process takes every position), so whatever else loads this shared machine loads both sides alike.
 * Per block: req/s and the server's CPU time per request, read in nanoseconds from /proc/<pid>/task/<tid>/schedstat
 * (all threads; steadier than req/s on a shared machine). Per round, side A's CPU/req over side B's gives one paired
 * ratio; the figure is the median of the rounds' ratios, with their interquartile range.
 *
 * The harness's own noise is printed every run: the twins' ratio (A's early process over its late one, and the same
 * for B) is an A/A comparison taken from the same blocks. `--aa` makes side B identical to side A (both as
 * deployed), so the headline figure itself is an A/A one and should read about 0 %. `--b-root <dir>` runs side B
 * from another checkout of this repository, as deployed (old code against new code, both with observability on);
 * `--b-env NAME=value` (repeatable) runs side B as deployed with that environment on top (a setting against the
 * default). `--b-bare` makes side B bare Hono with the same route shapes (bench/http-targets.ts): the reference
 * server's CPU per request over bare Hono's, paired, which bench:http can only compare one after the other.
 * `--a-floor` makes side A the reference server observed by bench/support/floor-observer.ts (the same request line
 * and latency histogram with no library and nothing to spare; the server's own metrics and log off): what
 * observing every request costs at the least, whoever implements it.
 *
 * Like bench:http, the servers run on a reserved core and autocannon on the others (bench/support/cpu-pinning.ts);
 * `--no-pin`, and `--together` (two servers loaded at once), leave placement to the scheduler.
 *
 * `--route post-keyed` sends each POST with a fresh Idempotency-Key, so it runs as a unit of work (the write path
 * as clients that retry use it); `--postgres` runs every reference process on a database of its own on a throwaway
 * PostgreSQL (the tests' harness) instead of SQLite. The CPU per request is the server process's; the backends'
 * is not counted (bench/profile-get.ts --postgres counts it).
 *
 *   npm run bench:observability -- [--rounds N] [--seconds S] [--route get|post|post-keyed] [--postgres] [--no-pin]
 *                                   [--aa | --b-root <dir> | --b-env NAME=value ... | --b-bare] [--a-floor]
 */
import { resolve } from 'node:path'
import autocannon from 'autocannon'
import { createDatabase, startPostgres } from '../test/support/postgres.js'
import type { TargetInfo } from './http-targets.js'
import { pinBenchProcess } from './support/cpu-pinning.js'
import { withFreshIdempotencyKey } from './support/fresh-key.js'
import { cpuNanoseconds } from './support/proc-cpu.js'
import { ROOT, startServerChild, stopServerChildren } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback
}
const rounds = Math.min(100, Math.max(2, Number(option('--rounds', '16'))))
const seconds = Math.min(30, Math.max(0.5, Number(option('--seconds', '1'))))
const routes = option('--route', 'get,post').split(',')
const aa = args.includes('--aa')
const bBare = args.includes('--b-bare')
const aFloor = args.includes('--a-floor')
const together = args.includes('--together')
/** Not with `--together`: two servers loaded at once need a core each. */
const cpus = pinBenchProcess(!args.includes('--no-pin') && !together)
const bRoot = args.includes('--b-root') ? resolve(option('--b-root', ROOT)) : undefined
/** NAME=value, split at the first `=`: a value may hold more (`NODE_OPTIONS=--max-semi-space-size=64`). */
const bEnv = Object.fromEntries(
  args.flatMap((a, i) => {
    if (args[i - 1] !== '--b-env') return []
    const at = a.indexOf('=')
    if (at <= 0) throw new Error(`--b-env takes NAME=value, not ${a}`)
    return [[a.slice(0, at), a.slice(at + 1)] as const]
  }),
)
const CONNECTIONS = 50
const pg = args.includes('--postgres') ? await startPostgres() : undefined

interface Side {
  label: string
  root: string
  observability: boolean
  env?: Record<string, string>
  /** bench/http-targets.ts's kind: the reference server, bare Hono with the same route shapes, or the floor. */
  kind?: 'reference' | 'bare' | 'floor'
}
const sideA: Side = aFloor
  ? { label: 'floor (library-free line and histogram)', root: ROOT, observability: false, kind: 'floor' }
  : { label: 'on', root: ROOT, observability: true }
const sideB: Side = aa
  ? { label: 'on (A/A twin)', root: ROOT, observability: true }
  : bBare
    ? { label: 'bare Hono', root: ROOT, observability: false, kind: 'bare' }
    : bRoot
      ? { label: `on, ${bRoot}`, root: bRoot, observability: true }
      : Object.keys(bEnv).length > 0
        ? {
            label: `on, ${Object.entries(bEnv)
              .map(([k, v]) => `${k}=${v}`)
              .join(' ')}`,
            root: ROOT,
            observability: true,
            env: bEnv,
          }
        : { label: 'off', root: ROOT, observability: false }

interface Target extends TargetInfo {
  pid: number
}

async function start(side: Side): Promise<Target> {
  const kind = side.kind ?? 'reference'
  const database = pg && kind !== 'bare' ? [await createDatabase(pg.url)] : []
  const { child, ...info } = await startServerChild<TargetInfo>({
    script: 'http-targets.ts',
    args: [kind, ...database],
    root: side.root,
    name: 'a target',
    env: {
      AGENTOPS_LOG_LEVEL: side.observability ? 'info' : 'silent',
      AGENTOPS_METRICS: side.observability ? 'on' : 'off',
      ...side.env,
    },
    cpus: cpus.server,
  })
  return { ...info, pid: child.pid ?? 0 }
}

function requests(t: TargetInfo, route: string): autocannon.Request[] {
  const headers = { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' }
  if (route === 'get') return [{ method: 'GET', path: `/v1/runs/${t.runId}`, headers }]
  const post: autocannon.Request = {
    method: 'POST',
    path: '/v1/agents',
    headers,
    body: '{"name":"bench","behavior":"autonomous","capabilities":["a"]}',
  }
  return [route === 'post-keyed' ? withFreshIdempotencyKey(post) : post]
}

interface Block {
  rps: number
  cpuUs: number
  non2xx: number
}

async function block(t: Target, route: string, s: number, connections = CONNECTIONS): Promise<Block> {
  const before = cpuNanoseconds(t.pid)
  const r = (await autocannon({
    url: t.url,
    connections,
    duration: s,
    requests: requests(t, route),
  })) as autocannon.Result
  const cpuUs = (cpuNanoseconds(t.pid) - before) / 1e3 / Math.max(1, r.requests.total)
  return { rps: r.requests.total / s, cpuUs, non2xx: r.non2xx }
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
const quantile = (xs: number[], q: number) => sorted(xs)[Math.round((xs.length - 1) * q)] ?? Number.NaN
const median = (xs: number[]) => quantile(xs, 0.5)
const pct = (ratio: number) => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)}%`
const spread = (ratios: number[]) =>
  `${pct(median(ratios))} (IQR ${pct(quantile(ratios, 0.25))} .. ${pct(quantile(ratios, 0.75))})`

// Started A B B A: each side has an early and a late process (an early process measured steadily dearer than its
// twin on a loaded machine), and the twins give the A/A figure.
const aEarly = await start(sideA)
const bEarly = await start(sideB)
const bLate = await start(sideB)
const aLate = await start(sideA)
const targets = [aEarly, bEarly, bLate, aLate]
console.log(
  `bench:observability — A: ${sideA.label}, B: ${sideB.label}; ${rounds} rounds of ${seconds} s blocks ` +
    (together
      ? `(an A and a B process loaded together, ${CONNECTIONS / 2} connections each, twice a round)`
      : `(each process in turn, order rotating, ${CONNECTIONS} connections)`) +
    `; ${cpus.server === undefined ? 'cores left to the scheduler' : `servers on core ${cpus.server}, autocannon on ${cpus.rest}`}` +
    '; CPU/req from schedstat',
)
for (const route of routes) {
  for (const t of targets) await block(t, route, 2) // warm-up: JIT, caches, connections
  const cpu = targets.map(() => [] as number[])
  const rps = targets.map(() => [] as number[])
  let problems = 0
  for (let r = 0; r < rounds; r++) {
    // Round r starts at process r mod 4 and reverses direction every 4 rounds: each takes every position.
    const order = [0, 1, 2, 3].map((i) => (r + (Math.floor(r / 4) % 2 === 0 ? i : 4 - i)) % 4)
    // Together: an A process and a B process loaded at the same time (half the connections each), so both see
    // the same moment of the machine; else one process at a time.
    const groups = together
      ? r % 2 === 0
        ? [
            [0, 2],
            [3, 1],
          ]
        : [
            [1, 3],
            [2, 0],
          ]
      : order.map((i) => [i])
    for (const group of groups) {
      const blocks = await Promise.all(
        group.map((i) => block(targets[i] as Target, route, seconds, CONNECTIONS / group.length)),
      )
      for (const [k, i] of group.entries()) {
        const b = blocks[k] as Block
        problems += b.non2xx
        cpu[i]?.push(b.cpuUs)
        rps[i]?.push(b.rps)
      }
    }
  }
  const at = (i: number, r: number) => cpu[i]?.[r] ?? Number.NaN
  const rs = [...Array(rounds).keys()]
  const paired = rs.map((r) => (at(0, r) + at(3, r)) / (at(1, r) + at(2, r)))
  const twinsA = rs.map((r) => at(0, r) / at(3, r))
  const twinsB = rs.map((r) => at(1, r) / at(2, r))
  const side = (is: number[]) => {
    const c = rs.map((r) => is.reduce((s, i) => s + at(i, r), 0) / is.length)
    const q = rs.map((r) => is.reduce((s, i) => s + (rps[i]?.[r] ?? 0), 0) / is.length)
    return `${median(q).toFixed(0)} req/s, ${median(c).toFixed(1)} µs CPU/req`
  }
  const label =
    route === 'get'
      ? 'GET /v1/runs/{id}'
      : `POST /v1/agents${route === 'post-keyed' ? ' (fresh Idempotency-Key)' : ''}`
  console.log(`${label}${problems ? `  (non-2xx answers: ${problems})` : ''}`)
  console.log(`  A ${sideA.label}: ${side([0, 3])}   B ${sideB.label}: ${side([1, 2])}`)
  console.log(`  paired CPU/req, A over B: ${spread(paired)}`)
  // With --together the twins ran in different pairs (not at the same moment): --aa is the A/A of the headline.
  console.log(`  A/A (twins, early over late): A ${spread(twinsA)}, B ${spread(twinsB)}`)
}
stopServerChildren()
await pg?.stop()
