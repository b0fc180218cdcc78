/**
 * The `conformance-switch` test runner of `npm run conformance:stryker` (a StrykerJS plugin): ONE reference server
 * per Stryker worker, built from the sandbox's instrumented sources, with the active mutant switched inside it for
 * each run (server-switch.mjs, preloaded into it), and the conformance suite called in this process
 * (conformance/dist's `main`, once imported) instead of a new suite, server and key-issuing process per mutant.
 * With STRYKER_REPLICAS > 1 (run.mjs --replicas) that one server is a ReplicaSet: N servers on one PostgreSQL
 * database behind a round-robin balancer, switched together.
 *
 * - Independence: every run gets fresh identities (its own workspaces and keys, issued into the server's store with
 *   the mutant already active, as `--reference` issues them), so what one mutant left behind (resources, rate-limit
 *   windows, quotas, idempotency keys) is in workspaces no later run uses; the suite undoes its own resources as
 *   against any deployment. Each run has its own webhook receiver on the worker's one port (the server's one
 *   allowed private target).
 * - Static mutants (executed only while the server loads and starts; Stryker's dry run sees them in the static
 *   coverage the instrumented code records before the runner sets a test id) get a server started with the mutant
 *   active (`reloadEnvironment`, `mutantActivation: 'static'`), and the next runtime mutant a clean one again.
 *   Mutants the dry run never reached are NoCoverage without a run. A runtime mutant the suite did not kill whose code
 *   the dry run's checks ran but which never ran while it was active (its hits are counted) is judged again the
 *   static way: code a server runs once and keeps the result of (a transport made on its first send) runs mutated
 *   only in a server started so.
 * - Coverage and timing: the dry run is one test per spec section that has mutants in the sandbox (its check
 *   families), each timed, its coverage kept to the mutants of its own section's modules (a mutant is judged by
 *   its own section's checks only, so one they never reach is NoCoverage without a run). Stryker's timeout for a
 *   mutant is timeoutFactor x its section's time + timeoutMS (180 s, the last resort). The runner's own deadline for a run is
 *   timeoutFactor x the same time + conformanceSwitch.timeoutMS (10 s), less the time the suite or the server
 *   waited for a CPU that other work held:
 *   when it passes, the suite is cut short (its interrupt signal), the server killed (it may hang or loop) and the
 *   mutant reported Timeout; the next run gets a fresh server. Stryker's timeout stays the last resort (it replaces
 *   the worker; the server exits with the worker's IPC channel). Stryker's hit limit is not used (see judge).
 * - Each run stops at the first core failure or core check that could not run (--bail, which runs the core checks
 *   first; with --strict-profile a profile failure skips the profile checks after it and cuts short those under
 *   way) and runs only the check families of the mutated module's section (scope.mjs CHECKS). A server that does
 *   not answer `end` within END_MS of the suite's verdict is replaced rather than waited on. Each run's JSON report
 *   is kept under STRYKER_SUITE_REPORTS, named by the mutant, for run.mjs's per-section table.
 */
import { spawn } from 'node:child_process'
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { commonTokens, declareClassPlugin, PluginKind, tokens } from '@stryker-mutator/api/plugin'
import { DryRunStatus, MutantRunStatus, TestStatus } from '@stryker-mutator/api/test-runner'
import { addCoverage } from './coverage.mjs'
import { KillOrder } from './kill-order.mjs'
import { coreCouldNotRun, harnessFault, killers, noticed } from './noticed.mjs'
import { CHECKS, checksFor, sectionOf, WAIT_MS } from './scope.mjs'
import { mutantKey } from './stores.mjs'

/** The one "test" Stryker sees: the conformance suite. */
export const SUITE_TEST = 'conformance suite'
/** The stream replay window the suite's --reference runs the server with (REFERENCE_REPLAY_WINDOW). */
const REPLAY_WINDOW = 20
/** The attempts a webhook delivery gets in the server --reference starts (REFERENCE_WEBHOOK_MAX_ATTEMPTS). */
const MAX_ATTEMPTS = 4
/**
 * The public URL the server's messages link runs to (AGENTOPS_PUBLIC_URL): text only, never fetched, and one for
 * every worker's server whatever port a restart takes (the config file declaring it is written once).
 */
const PUBLIC_URL = 'https://console.agentops.invalid'

/** Where the dry run leaves its per-test times in the sandbox, for the workers that did not run it. */
const TIMINGS_FILE = '.switch-timings.json'
/** The mutants the dry run's checks ran (not only the server's start): read by every worker, like the timings. */
const RUN_BY_CHECKS_FILE = '.switch-run-by-checks.json'
/** Every worker's kills, one line each, from which every worker orders its runs' checks (kill-order.mjs). */
const KILLS_FILE = '.switch-kills.jsonl'
/** The run scheduler's, the SSE trace's and the outbox's poll in the judged server: longer than any run's checks (start()). */
const NO_POLL_MS = 600_000
/** How long a run the runner cut short may take to end once aborted before it is left behind. */
const SETTLE_MS = 5000
const TIMED_OUT = Symbol('timed out')
/**
 * How long the server may take to answer `end` once the suite has its verdict. A server that does not answer
 * then has its event loop held (a mutant looping in a timer's or a worker's pass after the suite stopped at its
 * first failure): waiting for the run's deadline added ~20 s to each such run and told nothing the suite's verdict
 * had not told already.
 */
const END_MS = 3000
/**
 * A killing check that ran this long mostly waited (for a run to move, a frame, a delivery): see confirmKill. Below
 * every section's wait bound (WAIT_MS; 10-15 s elsewhere) and above what a clean check of the scope takes but for a
 * few (the webhook retries' about 3 s), which are then confirmed needlessly, at the cost of one clean check.
 */
const SLOW_KILL_MS = 2500

/**
 * How long a process's main thread has waited, runnable, for a CPU (milliseconds; Linux's /proc/PID/schedstat, 0
 * where there is none): on a machine busy with other work, time the run could not use.
 */
function cpuWaitMs(pid) {
  const now = performance.now()
  const last = lastCpuWait.get(pid)
  if (last && now - last.at < CPU_WAIT_FRESH_MS) return last.ms
  let ms
  try {
    ms = Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6 || 0
  } catch {
    ms = 0
  }
  if (lastCpuWait.size > 64) lastCpuWait.clear()
  lastCpuWait.set(pid, { at: now, ms })
  return ms
}

/**
 * A reading this recent answers again: the suite's waits ask for the withheld time on every poll, and reading the
 * two processes' schedstat each time was a measurable share of a worker's own CPU.
 */
const CPU_WAIT_FRESH_MS = 20
const lastCpuWait = new Map()

/**
 * The checks a kill's report names (the failed ones, and the core checks that could not run or only partly ran, not
 * those the run never began: --bail's), without the sweep's, which judge the traffic of a whole run and have nothing
 * to judge in a run of a few checks.
 */
export function confirmIds(report) {
  const couldNotRun = (r) =>
    r.level === 'core' &&
    (r.outcome === 'partial' || (r.outcome === 'skip' && !String(r.message ?? '').startsWith('not run: ')))
  return (report.results ?? [])
    .filter((r) => r.outcome === 'fail' || couldNotRun(r))
    .map((r) => r.id)
    .filter((id) => !id.startsWith('sweep.'))
}

/**
 * The mutant ids of each spec section's modules, read from the sandbox's instrumented sources (StrykerJS names
 * every mutant it placed in a module in its `stryMutAct_9fa48("<id>")` calls): a Map from section to ids.
 */
export function mutantsBySection(root) {
  const bySection = new Map()
  const src = join(root, 'src')
  if (!existsSync(src)) return bySection
  for (const file of readdirSync(src, { recursive: true })) {
    if (!file.endsWith('.ts')) continue
    const section = sectionOf(`src/${file}`)
    if (!section) continue
    const ids = [...readFileSync(join(src, file), 'utf8').matchAll(/stryMutAct_9fa48\("([^"]+)"\)/g)]
    if (ids.length === 0) continue
    const own = bySection.get(section) ?? new Set()
    bySection.set(section, own)
    for (const [, id] of ids) own.add(id)
  }
  return bySection
}

/**
 * A dry run's coverage with each section's test keeping only the mutants of its own section's modules: a mutant
 * is judged by its own section's checks alone (scope.mjs CHECKS), so one those checks never reach in the clean
 * run would survive a full run of them; Stryker reports it NoCoverage without one, and its timeout is its
 * section's time, not the sum of every section that happened to pass through its module. Static coverage is kept
 * whole (a static mutant gets a server of its own and its section's checks).
 */
export function ownSectionCoverage(coverage, bySection) {
  const perTest = {}
  for (const [testId, counts] of Object.entries(coverage.perTest ?? {})) {
    const own = bySection.get(testId)
    perTest[testId] = own ? Object.fromEntries(Object.entries(counts).filter(([id]) => own.has(id))) : counts
  }
  return { static: coverage.static ?? {}, perTest }
}

/** A reference server started from the sandbox (`bin/agentops.mjs serve`) with the control channel preloaded. */
class SwitchedServer {
  /**
   * `freePort`: the worker's choice of a port for a server it starts (the suite's, conformance/src/ports.ts).
   * `sharedDatabaseUrl`: a replica's, the database another server of its ReplicaSet made (and drops).
   */
  constructor(root, receiverPort, staticMutant, freePort, sharedDatabaseUrl) {
    this.root = root
    this.freePort = freePort
    this.staticMutant = staticMutant
    // In run.mjs's directory in memory (server-stores.mjs), else inside the sandbox; either is removed at the run's
    // end, so a worker Stryker kills (a timeout) leaves nothing behind.
    this.dir = mkdtempSync(join(process.env.STRYKER_SERVER_STORES || root, '.switch-server-'))
    // run.mjs --postgres: a database of this server's own on that PostgreSQL server, made in start().
    this.postgresAdmin = sharedDatabaseUrl ? undefined : process.env.STRYKER_POSTGRES_ADMIN_URL || undefined
    this.databaseUrl =
      sharedDatabaseUrl ?? (this.postgresAdmin ? undefined : `sqlite:${join(this.dir, 'db.sqlite')}`)
    this.receiverPort = receiverPort
    /** The worker's nats-server as host:port, when it has one (set before start). */
    this.natsTarget = undefined
    this.pending = new Map()
    this.nextId = 0
    this.output = ''
  }

  async start() {
    if (this.postgresAdmin) this.databaseUrl = await createDatabase(this.postgresAdmin)
    const port = await this.freePort()
    this.baseUrl = `http://127.0.0.1:${port}`
    const receiver = `127.0.0.1:${this.receiverPort}`
    const env = {
      // As the suite's --reference starts it (conformance/src/reference.ts): quick retries and heartbeats.
      AGENTOPS_WEBHOOK_RETRY_BASE_MS: '500',
      AGENTOPS_WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
      AGENTOPS_STREAM_HEARTBEAT_MS: '1000',
      AGENTOPS_STREAM_MAX_REPLAY: String(REPLAY_WINDOW),
      // No poll the checks' waits reach: what a commit changes reaches the stream's subscribers, a run's SSE trace
      // and the run scheduler through the wake-up the commit sends (§4: records are pushed "as they land"). The
      // polls are a deployed server's net for a wake-up lost or a change another replica made; with them, a mutant
      // that broke a wake-up still delivered within the checks' waits, only later.
      AGENTOPS_STREAM_FALLBACK_POLL_MS: '0',
      AGENTOPS_RUN_POLL_MS: String(NO_POLL_MS),
      AGENTOPS_TRACE_POLL_MS: String(NO_POLL_MS),
      // The webhook and destination outbox likewise: new events wake it, and a retry wakes it when it comes due.
      AGENTOPS_WEBHOOK_POLL_MS: String(NO_POLL_MS),
      // No request log and no metrics: the suite judges answers alone, and the scope's log and metric calls are
      // ignored mutants (ignorers.mjs). Warnings and errors still reach the output kept for a failed start.
      AGENTOPS_LOG_LEVEL: 'warn',
      AGENTOPS_METRICS: 'off',
      ...process.env,
      // The receiver by the name localhost too (webhooks.listed-name-resolved), as the suite's --reference lists it.
      AGENTOPS_WEBHOOK_PRIVATE_TARGETS: `${receiver},localhost:${this.receiverPort}`,
      // The worker's nats-server too, where destinations.event-bus's nats destinations publish.
      AGENTOPS_DESTINATION_PRIVATE_TARGETS: [receiver, this.natsTarget].filter(Boolean).join(','),
      AGENTOPS_TOOL_PRIVATE_TARGETS: receiver,
      AGENTOPS_STRYKER_DATABASE_URL: this.databaseUrl,
      // The public URL its chat messages and incidents link runs to, declared in the config file (init()).
      AGENTOPS_PUBLIC_URL: PUBLIC_URL,
    }
    delete env.__STRYKER_ACTIVE_MUTANT__
    if (this.staticMutant !== undefined) env.__STRYKER_ACTIVE_MUTANT__ = this.staticMutant
    // The sandbox's copy, as the server and the suite are: a checkout changed under a running run (a merge) leaves
    // the run on the code it began with.
    const preload = pathToFileURL(join(this.root, 'conformance', 'stryker', 'server-switch.mjs')).href
    this.child = spawn(
      process.execPath,
      [
        '--import',
        preload,
        join(this.root, 'bin', 'agentops.mjs'),
        'serve',
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
        '--database-url',
        this.databaseUrl,
      ],
      { cwd: this.root, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
    )
    const keep = (d) => {
      this.output = (this.output + d.toString()).slice(-8000)
    }
    this.child.stdout.on('data', keep)
    this.child.stderr.on('data', keep)
    this.child.on('message', (m) => {
      const waiter = this.pending.get(m?.reply)
      if (!waiter) return
      this.pending.delete(m.reply)
      if (m.error) waiter.reject(new Error(m.error))
      else waiter.resolve(m)
    })
    this.exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.exited.then(() => {
      for (const w of this.pending.values())
        w.reject(new Error(`the reference server exited:\n${this.tail()}`))
      this.pending.clear()
    })
    const deadline = Date.now() + 90_000
    for (;;) {
      if (this.child.exitCode !== null || this.child.signalCode !== null)
        throw new Error(`the reference server exited at start:\n${this.tail()}`)
      try {
        const res = await fetch(`${this.baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) })
        if (res.ok) return
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new Error(`the reference server did not answer within 90 s:\n${this.tail()}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  tail() {
    return this.output.slice(-2000)
  }

  get alive() {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
  }

  /** The server's process ids (one; a ReplicaSet has one per replica). */
  get pids() {
    return this.child?.pid === undefined ? [] : [this.child.pid]
  }

  send(cmd, fields = {}) {
    if (!this.alive) return Promise.reject(new Error(`the reference server is not running:\n${this.tail()}`))
    const id = ++this.nextId
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      // A channel that closed meanwhile (the server killed after a deadline) fails this command, not the process.
      this.child.send({ id, cmd, ...fields }, (err) => {
        if (err && this.pending.delete(id)) reject(err)
      })
    })
  }

  /** Ends a server that may not answer (a hung mutant) at once: a stopped or looping process ignores SIGTERM. */
  async kill() {
    if (this.alive) {
      this.child.kill('SIGKILL')
      await this.exited
    }
    await this.removeStore()
  }

  async stop() {
    if (this.alive) {
      this.child.kill('SIGTERM')
      let grace
      await Promise.race([this.exited, new Promise((r) => (grace = setTimeout(r, 5000)))])
      clearTimeout(grace)
      if (this.alive) this.child.kill('SIGKILL')
    }
    await this.removeStore()
  }

  async removeStore() {
    rmSync(this.dir, { recursive: true, force: true })
    if (this.postgresAdmin && this.databaseUrl) await dropDatabase(this.postgresAdmin, this.databaseUrl)
  }
}

/**
 * run.mjs --replicas N: N switched servers on ONE PostgreSQL database behind a round-robin balancer (the cluster
 * tests' own, test/support/balancer.mjs), as an operator scales the reference out, judged as one server is: the
 * suite talks to the balancer, so one check's requests and its stream's socket land on different replicas, and what
 * only another replica's change makes happen (the key watch, the change feed's wake-ups, the leases of the run
 * scheduler and the outbox) is judged. Every replica has the mutant active: a deployment runs one build. Keys are
 * provisioned through the first replica (the store is shared); a mutant's hits, coverage and CPU are the sum over
 * the replicas.
 */
class ReplicaSet {
  constructor(root, receiverPort, staticMutant, freePort, replicas) {
    this.root = root
    this.receiverPort = receiverPort
    this.staticMutant = staticMutant
    this.freePort = freePort
    this.count = replicas
    this.replicas = []
    this.natsTarget = undefined
  }

  /** One replica: on the database of `sharedDatabaseUrl`, or (the first) on one it makes. */
  replica(sharedDatabaseUrl) {
    const server = new SwitchedServer(
      this.root,
      this.receiverPort,
      this.staticMutant,
      this.freePort,
      sharedDatabaseUrl,
    )
    server.natsTarget = this.natsTarget
    this.replicas.push(server)
    return server
  }

  async start() {
    // The first replica makes the database and migrates it; the others start on it together once it answers.
    const first = this.replica(undefined)
    await first.start()
    this.databaseUrl = first.databaseUrl
    const others = Array.from({ length: this.count - 1 }, () => this.replica(this.databaseUrl))
    await Promise.all(others.map((r) => r.start()))
    const { startBalancer } = await import('../../test/support/balancer.mjs')
    this.balancer = await startBalancer(
      this.replicas.map((r) => r.baseUrl),
      await this.freePort(),
    )
    this.baseUrl = this.balancer.url
  }

  tail() {
    return this.replicas.map((r, i) => `replica ${i}:\n${r.tail()}`).join('\n')
  }

  get alive() {
    return this.replicas.length === this.count && this.replicas.every((r) => r.alive)
  }

  get pids() {
    return this.replicas.flatMap((r) => r.pids)
  }

  /** `provision` through the first replica; every other command to each, their answers summed. */
  async send(cmd, fields = {}) {
    if (cmd === 'provision') return this.replicas[0].send(cmd, fields)
    const answers = await Promise.all(this.replicas.map((r) => r.send(cmd, fields)))
    if (cmd !== 'end') return answers[0]
    const coverage = { static: {}, perTest: {} }
    for (const a of answers) if (a.coverage) addCoverage(coverage, a.coverage)
    const hits = answers.map((a) => a.hitCount).filter((h) => h !== undefined)
    return {
      coverage,
      hitCount: hits.length === 0 ? undefined : hits.reduce((a, b) => a + b, 0),
      cpuMicros: answers.reduce((sum, a) => sum + (a.cpuMicros ?? 0), 0),
    }
  }

  async kill() {
    await this.balancer?.close()
    // The replicas sharing the database first: the first drops it once they are gone.
    await Promise.all(this.replicas.slice(1).map((r) => r.kill()))
    await this.replicas[0]?.kill()
  }

  async stop() {
    await this.balancer?.close()
    await Promise.all(this.replicas.slice(1).map((r) => r.stop()))
    await this.replicas[0]?.stop()
  }
}

/** A fresh database on the PostgreSQL server of `adminUrl` (its `postgres` database), as the tests make theirs. */
async function createDatabase(adminUrl) {
  const name = `agentops_stryker_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  await onAdmin(adminUrl, (sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/** Drops a server's database once its process is gone; its connections, if any survive, are ended with it. */
async function dropDatabase(adminUrl, databaseUrl) {
  const name = new URL(databaseUrl).pathname.slice(1)
  await onAdmin(adminUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
}

async function onAdmin(adminUrl, work) {
  const { default: postgres } = await import('postgres')
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    await work(sql)
  } finally {
    await sql.end()
  }
}

export class ConformanceSwitchRunner {
  static inject = tokens(commonTokens.logger, commonTokens.options)

  /**
   * Stryker passes the logger and its options (timeoutMS and timeoutFactor make the runner's own deadline). A test
   * passes `root` (a sandbox other than the working directory), `suite` (the suite's `main`, e.g. from its sources)
   * with its `identities` (`provisionArgs` of its reference.ts, `provisionedTokens` of provision.ts and `TOKENS` of
   * config.ts), with its `freePort` (of ports.ts), and `dryRunOnly`: check prefixes for the dry run, one test,
   * instead of one per section; or an object from section to check prefixes, one test per section it names, in its
   * order, instead of scope.mjs's.
   */
  constructor(logger, options = {}, { root = process.cwd(), suite, identities, freePort, dryRunOnly } = {}) {
    this.logger = logger
    // The runner's own deadline (conformanceSwitch.timeoutMS) sits below Stryker's timeout (timeoutMS), which
    // replaces the whole worker and gives no time back for a CPU other work held: the runner's must come first.
    this.timeoutMS = options.conformanceSwitch?.timeoutMS ?? options.timeoutMS ?? 5000
    this.timeoutFactor = options.timeoutFactor ?? 1.5
    // Stryker's worker runs in the sandbox: its instrumented build (dist/) and its compiled suite.
    this.root = root
    this.suite = suite
    this.identities = identities
    this.dryRunOnly = dryRunOnly
    this.reports = process.env.STRYKER_SUITE_REPORTS
    // run.mjs --also-postgres's second pass: the mutants the first left alive (stores.mjs aliveKeys), the only ones
    // it runs; its mutate ranges also take mutants nested in theirs, which the first pass judged already.
    const judgeOnly = process.env.STRYKER_JUDGE_ONLY
    this.judgeOnly = judgeOnly ? new Set(JSON.parse(readFileSync(judgeOnly, 'utf8'))) : undefined
    this.runs = 0
    // run.mjs --replicas N (with --postgres): N servers on one database behind a balancer (ReplicaSet).
    this.replicas = Number(process.env.STRYKER_REPLICAS || 1)
    if (this.replicas > 1 && !process.env.STRYKER_POSTGRES_ADMIN_URL)
      throw new Error(
        'replicas share one PostgreSQL database: STRYKER_REPLICAS needs STRYKER_POSTGRES_ADMIN_URL',
      )
    /**
     * A free port for a server or receiver of this worker: the suite's own choice (conformance/src/ports.ts, its
     * compiled copy unless a test passes it), below the kernel's ephemeral range, so no listen(0) or outbound
     * connection takes it before the child binds it, and never one the worker handed out before (a timed-out run
     * may still talk to it).
     */
    this.freePort = freePort
    this.killOrder = new KillOrder(join(root, KILLS_FILE))
  }

  /** The running server's process id (a test tells a reused server from a fresh one by it). */
  get serverPid() {
    return this.server?.alive ? this.server.pids[0] : undefined
  }

  capabilities() {
    return { reloadEnvironment: true }
  }

  async init() {
    const dist = join(this.root, 'conformance', 'dist')
    // The identities the suite's --reference provisions, the way it does, from the suite itself (the sandbox's
    // compiled copy).
    const load = async (file) => import(pathToFileURL(join(dist, file)).href)
    if (!this.identities) {
      const reference = await load('reference.js')
      this.identities = {
        provisionArgs: reference.provisionArgs,
        revokeCommand: reference.revokeCommand,
        issueExpiringCommand: reference.issueExpiringCommand,
        referenceRunLink: reference.referenceRunLink,
        provisionedTokens: (await load('provision.js')).provisionedTokens,
        TOKENS: (await load('config.js')).TOKENS,
      }
    }
    if (!this.suite) {
      this.suite = (await import(pathToFileURL(join(dist, 'cli.js')).href)).main
      // The suite's waits give back the time a busy machine withheld from a mutant run (scope.mjs WAIT_MS).
      this.giveBackWithheldTime ??= (
        await import(pathToFileURL(join(dist, 'wait.js')).href)
      ).giveBackWithheldTime
      // The contract compiles once per worker, not once per run (a measurable share of a run): a compiled contract
      // is read-only to the checks, and its validators, compiled as the checks first need them, are kept too.
      const { Contract } = await import(pathToFileURL(join(dist, 'contract.js')).href)
      const compiled = new Map()
      const fromFile = Contract.fromFile.bind(Contract)
      Contract.fromFile = (path) => {
        if (!compiled.has(path)) compiled.set(path, fromFile(path))
        return compiled.get(path)
      }
    }
    this.freePort ??= (await load('ports.js')).freePort
    this.receiverPort = await this.freePort()
    // One nats-server per worker, as the suite's --reference starts one (destinations.event-bus publishes there);
    // without nats-server that check skips.
    if (this.nats === undefined) {
      const started = await load('nats.js').then(
        ({ startLocalNats }) => startLocalNats(() => this.freePort()),
        (err) => ({ nats: null, reason: `the suite's nats.js did not load: ${err.message}` }),
      )
      this.nats = started.nats
      if (!started.nats) this.logger?.info?.(`destinations.event-bus will skip: ${started.reason}`)
    }
    this.configDir = mkdtempSync(join(this.root, '.switch-suite-'))
    this.configFile = join(this.configDir, 'conformance.json')
    const runLink = this.identities.referenceRunLink?.(PUBLIC_URL)
    // The reference's subscribe message, declared: a mutant that pushes no record then fails the stream's core
    // checks (their silence is the deployment's failure, not the suite's guess) and --bail ends its run there.
    writeFileSync(
      this.configFile,
      JSON.stringify({
        stream: { replayWindow: REPLAY_WINDOW, subscribe: { type: 'subscribe', topics: '{topics}' } },
        webhooks: { maxAttempts: MAX_ATTEMPTS },
        ...(runLink ? { destinations: { runLink } } : {}),
      }),
    )
  }

  async dispose() {
    await this.server?.stop()
    this.server = undefined
    await this.nats?.stop()
    this.nats = undefined
    if (this.configDir) rmSync(this.configDir, { recursive: true, force: true })
  }

  startCost() {
    const { user, system } = process.cpuUsage()
    return { at: Date.now(), workerMicros: user + system }
  }

  /**
   * What one run cost, appended to STRYKER_SUITE_REPORTS/costs-<pid>.jsonl for run.mjs's summary: wall time, this
   * worker's CPU (the suite) and the server's (requests, key issuing, and its start when this run started it).
   */
  recordCost(cost, server, serverMicros, fields) {
    const { user, system } = process.cpuUsage()
    const serverCpuMicros = serverMicros - (server.accountedMicros ?? 0)
    server.accountedMicros = serverMicros
    if (!this.reports) return
    const line = {
      ...fields,
      wallMs: Date.now() - cost.at,
      suiteCpuMs: Math.round((user + system - cost.workerMicros) / 1000),
      serverCpuMs: Math.round(serverCpuMicros / 1000),
    }
    appendFileSync(join(this.reports, `costs-${process.pid}.jsonl`), `${JSON.stringify(line)}\n`)
  }

  /**
   * A server for the next run: the running one, or a fresh one (with `staticMutant` active from its start), its
   * coverage recorded under `testId` once it answers.
   */
  async serverFor(fresh, staticMutant, testId = SUITE_TEST) {
    if (this.server?.alive && !fresh && !this.server.retire) return this.server
    await this.server?.stop()
    this.server =
      this.replicas > 1
        ? new ReplicaSet(this.root, this.receiverPort, staticMutant, this.freePort, this.replicas)
        : new SwitchedServer(this.root, this.receiverPort, staticMutant, this.freePort)
    this.server.natsTarget = this.nats?.hostPort
    try {
      await this.server.start()
    } catch (err) {
      await this.server.stop()
      this.server = undefined
      throw err
    }
    await this.server.send('track', { testId })
    return this.server
  }

  /**
   * The suite's identities in fresh workspaces named after `prefix`, as its token flags: `agentops keys
   * provision-conformance` with the arguments the suite's --reference gives it, run inside the server with the
   * mutant active (key issuance is reference code too).
   */
  async provision(server, prefix) {
    const { provisionArgs, provisionedTokens, TOKENS } = this.identities
    const args = provisionArgs(prefix, undefined)
    const { stdout } = await server.send('provision', { args })
    const tokens = provisionedTokens(stdout, (what) => new Error(`agentops ${args.join(' ')} ${what}`))
    return Object.entries(tokens).flatMap(([role, token]) => [`--${TOKENS[role].flag}`, token])
  }

  /**
   * One suite run against the server: fresh identities, the suite's report back (or why there is none). `interrupt`
   * ends the suite early (the runner's deadline), as an interrupt ends a run: the verdict and reports still come.
   */
  async runSuite(server, { mutant, name, only, section, module, interrupt, progress = {} }) {
    const run = `${process.pid}-${++this.runs}`
    progress.phase = 'issuing keys'
    const tokenFlags = await this.provision(server, `stryker-${run}`)
    // A user of its own on the worker's nats-server for a run that publishes there: the long-lived server keeps a
    // NATS connection per server list and credentials, so a new one opens (under the mutant) on each run.
    const publishes = !only || only.some((prefix) => 'destinations.event-bus'.startsWith(prefix))
    const nats =
      this.nats && publishes ? await this.nats.freshUrl().catch(() => this.nats.url) : this.nats?.url
    const json = join(this.reports ?? this.configDir, `${name ?? mutant ?? 'clean'}.json`)
    mkdirSync(join(json, '..'), { recursive: true })
    const first = mutant === undefined ? [] : this.killOrder.first(section, module)
    // The kit's CLI revoking a key in this server's store, in a process of its own, as --reference's revoke command:
    // the running server finds the revoke as it finds one of an operator's (stream.revoked-key-ends-connections).
    const revoke = this.identities.revokeCommand?.(server.root, server.databaseUrl)
    // And issuing a key that expires while the suite holds connections open (stream.expired-key-ends-connections).
    const issueExpiring = this.identities.issueExpiringCommand?.(server.root, server.databaseUrl)
    const argv = [
      '--base-url',
      server.baseUrl,
      '--graphql-url',
      `${server.baseUrl}/v1/graphql`,
      ...tokenFlags,
      ...(revoke ? ['--revoke', revoke] : []),
      ...(issueExpiring ? ['--issue-expiring', issueExpiring] : []),
      '--receiver-port',
      String(this.receiverPort),
      ...(nats ? ['--nats-url', nats] : []),
      '--config',
      this.configFile,
      '--strict-profile',
      // The section's own bound on the suite's waits (scope.mjs WAIT_MS), in the dry run and the mutant runs alike.
      ...(WAIT_MS[section] !== undefined ? ['--wait-ms', String(WAIT_MS[section])] : []),
      // --bail in the dry run too: it orders the checks as a mutant run does (core first, then profile, the sweep
      // last), so the clean run shows the reference passing them in that order; with no core failure it runs all.
      // (Within each group a mutant run may take other checks first; each check makes its own resources.)
      '--bail',
      // A mutant's run takes first the checks that killed most of its section's mutants so far (kill-order.mjs).
      ...(first.length > 0 ? ['--first', first.join(',')] : []),
      ...(only ? ['--only', only.join(',')] : []),
      '--json',
      json,
    ]
    const lines = []
    // Read at the runner's deadline: the last line says how far the suite had come.
    progress.lines = lines
    const io = { out: (l) => lines.push(l), err: (l) => lines.push(l) }
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('AGENTOPS_CONFORMANCE_')),
    )
    progress.phase = 'running the suite'
    const code = await this.suite(argv, env, io, interrupt)
    let report
    try {
      report = JSON.parse(readFileSync(json, 'utf8'))
    } catch {
      report = undefined
    }
    return { code, report, output: lines.slice(-40).join('\n') }
  }

  /**
   * The dry run: one test per spec section (the check families a mutant of that section is judged by, scope.mjs
   * CHECKS), each timed and with its own coverage, so that Stryker's timeout for a mutant follows the sections
   * whose checks reach it, and the runner's own deadline the section it runs. Together they run every check.
   */
  async dryRun() {
    const started = Date.now()
    // One test per section that has mutants in this sandbox (a --section or --since run mutates a few): the
    // others' checks could only cover mutants judged by another section's checks.
    const oneTest = Array.isArray(this.dryRunOnly)
    const bySection = oneTest ? undefined : mutantsBySection(this.root)
    const groups = oneTest
      ? [[SUITE_TEST, this.dryRunOnly]]
      : Object.entries(
          this.dryRunOnly ?? Object.fromEntries(Object.keys(CHECKS).map((s) => [s, checksFor(s)])),
        ).filter(([section]) => bySection.size === 0 || bySection.has(section))
    try {
      const tests = []
      const coverage = { static: {}, perTest: {} }
      for (const [id, only] of groups) {
        // Each section's checks on a server of their own, as a section run alone has them: code a server runs once
        // and keeps (a destination transport made on its first send) is then covered by the section whose checks
        // make it, not by whichever section happened to run first, and a mutant of it is run (and, never reached
        // on the long-lived server, judged again on one started with it: mutantRun).
        const cost = this.startCost()
        const server = await this.serverFor(true, undefined, id)
        await server.send('activate', { mutant: undefined, hitLimit: undefined })
        const at = Date.now()
        const { report, output } = await this.runSuite(server, {
          name: `clean-${tests.length + 1}`,
          only,
          section: id,
        })
        const test = { id, name: id, timeSpentMs: Date.now() - at }
        tests.push(
          !report || noticed(report)
            ? {
                ...test,
                status: TestStatus.Failed,
                failureMessage: report ? `${killers(report)}\n${output}` : output,
              }
            : { ...test, status: TestStatus.Success },
        )
        const ended = await server.send('end')
        addCoverage(coverage, ended.coverage)
        this.recordCost(cost, server, ended.cpuMicros, { mutant: 'dry run', static: false })
      }
      this.timings = Object.fromEntries(tests.map((t) => [t.id, t.timeSpentMs]))
      writeFileSync(join(this.root, TIMINGS_FILE), JSON.stringify(this.timings))
      this.logger.debug(`dry run: ${tests.length} tests in ${Date.now() - started} ms`)
      const mutantCoverage = bySection?.size ? ownSectionCoverage(coverage, bySection) : coverage
      const runByChecks = new Set(Object.values(mutantCoverage.perTest).flatMap((ids) => Object.keys(ids)))
      writeFileSync(join(this.root, RUN_BY_CHECKS_FILE), JSON.stringify([...runByChecks]))
      return { status: DryRunStatus.Complete, tests, mutantCoverage }
    } catch (err) {
      return { status: DryRunStatus.Error, errorMessage: String(err?.stack ?? err) }
    }
  }

  /**
   * How long a mutant of `section` may run: the timeout factor times its section's clean run in the dry run (which
   * ran it whole; a mutant run stops at the first core failure) plus timeoutMS, as Stryker computes its own from the
   * covering tests. Stryker's `timeout` stays the bound (it restarts the worker), for a section the dry run did not
   * time.
   */
  deadlineFor(section, timeout) {
    if (!this.timings) {
      try {
        this.timings = JSON.parse(readFileSync(join(this.root, TIMINGS_FILE), 'utf8'))
      } catch {
        this.timings = {}
      }
    }
    const ms = this.timings[section] ?? this.timings[SUITE_TEST]
    const own = ms === undefined ? Number.POSITIVE_INFINITY : this.timeoutFactor * ms + this.timeoutMS
    return Math.min(own, timeout ?? Number.POSITIVE_INFINITY)
  }

  /**
   * Waits up to SETTLE_MS for a suite run that was cut short to end; one still going holds the receiver's port, so
   * the next runs take another one.
   */
  async settle(run) {
    const settled = await Promise.race([
      run.then(
        () => true,
        () => true,
      ),
      new Promise((resolve) => setTimeout(() => resolve(false), SETTLE_MS).unref()),
    ])
    if (!settled) this.receiverPort = await this.freePort()
  }

  /**
   * One mutant's verdict. A kill that may be the server's rather than the mutant's (confirmKill) is checked on the
   * same server with no mutant active; when the clean server fails the same checks, an earlier mutant broke it (a
   * tool call that never returns holding the run scheduler's places, say) and every run on it would be killed: the
   * server is replaced and the mutant judged again on a fresh one, whose verdict stands, as a fresh process's would.
   * That server is replaced after it too, since the mutant may be what breaks a server. A static mutant's kill
   * stands: its server was started for it.
   */
  async mutantRun(options) {
    if (
      this.judgeOnly &&
      !this.judgeOnly.has(mutantKey(relative(this.root, options.sandboxFileName), options.activeMutant))
    )
      return {
        status: MutantRunStatus.Error,
        errorMessage:
          'not run in this pass: the first pass judged it (run.mjs --also-postgres runs the ones it left alive)',
      }
    // `kill`: what a kill by the suite's report needs for a second look (the report, its server); not for Stryker.
    const once = await this.mutantRunOnce(options)
    // A run the harness spoiled (its receiver's port taken) is run once more, on a fresh server; a second such run
    // is reported as the error it is, never as a kill.
    const {
      kill,
      unreached,
      harnessFault: _fault,
      ...first
    } = once.harnessFault ? await this.mutantRunOnce({ ...options, reloadEnvironment: true }) : once
    if (unreached && this.ranByChecks(options.activeMutant.id)) {
      // The suite passed without the mutated code running once while the mutant was active: code this server ran
      // before (a transport made on its first send, a value computed once and kept) and does not run again. The
      // mutated program runs it with the mutant from the start: judged so, on a server started with it active.
      const {
        kill: _kill,
        unreached: _unreached,
        ...again
      } = await this.mutantRunOnce({
        ...options,
        mutantActivation: 'static',
        rejudged: true,
      })
      return again
    }
    if (!kill) return first
    // A static mutant's server was started for it, with it active from load (which ending its run cannot undo):
    // nothing before it could have broken that server, and no run on it is clean.
    if (options.mutantActivation === 'static') return first
    if (await this.confirmKill(kill)) return first
    this.logger.info(
      `mutant ${kill.mutant}: the server failed ${confirmIds(kill.report).join(', ')} with no mutant active; judged again on a fresh server`,
    )
    if (this.server === kill.server) this.server = undefined
    await kill.server.kill()
    const { kill: _, ...again } = await this.mutantRunOnce({ ...options, reloadEnvironment: true })
    if (this.server) this.server.retire = true
    return again
  }

  /** Whether the dry run's checks ran the mutant's code (rather than only the server's start, or nothing). */
  ranByChecks(mutant) {
    if (!this.runByChecks) {
      try {
        this.runByChecks = new Set(JSON.parse(readFileSync(join(this.root, RUN_BY_CHECKS_FILE), 'utf8')))
      } catch {
        this.runByChecks = new Set()
      }
    }
    return this.runByChecks.has(mutant)
  }

  /**
   * Whether a kill stands without a second look (true), or the checks that killed it pass on the same server with
   * no mutant active (true) or fail there too (false: the server is broken). Looked at again: a kill where a core
   * check could not run or a killing check ran SLOW_KILL_MS or more (it waited, and a server an earlier mutant broke
   * fails so: what it waits for never comes). A kill by the sweep alone, or a fast failure, stands.
   */
  async confirmKill({ mutant, report, server, section }) {
    const ids = confirmIds(report)
    const slow = (report.results ?? []).some((r) => ids.includes(r.id) && (r.durationMs ?? 0) >= SLOW_KILL_MS)
    if (ids.length === 0 || !(slow || coreCouldNotRun(report))) return true
    if (this.server !== server || !server.alive) return true
    const cost = this.startCost()
    const interrupt = new AbortController()
    let timer
    const expired = new Promise((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), this.deadlineFor(section))
    })
    const clean = this.runSuite(server, {
      name: `${mutant}-clean`,
      only: ids,
      section,
      interrupt: interrupt.signal,
    })
    const outcome = await Promise.race([clean.catch(() => undefined), expired])
    clearTimeout(timer)
    if (outcome === TIMED_OUT) {
      interrupt.abort('the clean run of the killing checks took past its deadline')
      await this.settle(clean)
    }
    const passed = outcome !== TIMED_OUT && outcome?.report !== undefined && !noticed(outcome.report)
    const ended = passed ? await server.send('end').catch(() => undefined) : undefined
    this.recordCost(cost, server, ended?.cpuMicros ?? server.accountedMicros ?? 0, {
      mutant,
      confirmation: passed ? 'passed' : 'failed',
    })
    return passed
  }

  async mutantRunOnce(options) {
    const mutant = options.activeMutant.id
    const module = relative(this.root, options.sandboxFileName)
    const section = sectionOf(module)
    const only = section ? checksFor(section) : undefined
    const staticRun = options.mutantActivation === 'static'
    const limitMs = this.deadlineFor(section, options.timeout)
    // The dry run's test for the section run (this.timings names them), as what killed it.
    const testId = this.timings[section] !== undefined ? section : (options.testFilter?.[0] ?? SUITE_TEST)
    const cost = this.startCost()
    const killed = (failureMessage) => ({
      status: MutantRunStatus.Killed,
      killedBy: [testId],
      failureMessage,
      nrOfTests: 1,
    })
    let server
    try {
      // A static mutant needs a server that loads with it; after one, a runtime mutant needs a clean server again.
      const fresh = staticRun || options.reloadEnvironment || this.server?.staticMutant !== undefined
      server = await this.serverFor(fresh, staticRun ? mutant : undefined)
    } catch (err) {
      // The server could not start with the mutant: the suite noticed, as --reference would.
      this.logger.debug(`mutant ${mutant}: ${err?.stack ?? err}`)
      return killed(String(err?.message ?? err).slice(0, 2000))
    }
    const interrupt = new AbortController()
    // The deadline counts the time the run could use: time the suite (this process) or the server waited for a
    // CPU, taken by other work on the machine, is given back, so a busy machine does not make a slow run a Timeout.
    const waited = () => server.pids.reduce((sum, pid) => sum + cpuWaitMs(pid), cpuWaitMs(process.pid))
    const startedAt = Date.now()
    const waitedAtStart = waited()
    let timer
    const expired = new Promise((resolve) => {
      if (!Number.isFinite(limitMs)) return
      const check = () => {
        // At most twice the limit given back: a server spinning in a loop is itself always waiting for a CPU on a
        // busy machine, and would otherwise stretch its own deadline (a run of 130 s against a limit of 16 s).
        const used = Date.now() - startedAt - Math.min(2 * limitMs, waited() - waitedAtStart)
        if (used >= limitMs) resolve(TIMED_OUT)
        else timer = setTimeout(check, limitMs - used)
      }
      timer = setTimeout(check, limitMs)
    })
    const progress = { phase: 'activating the mutant' }
    // A section's shorter waits (scope.mjs WAIT_MS) span only time the run could use, as the deadline does.
    const waitMs = section ? WAIT_MS[section] : undefined
    const withheld = () => waited() - waitedAtStart
    if (waitMs) {
      this.withheld = withheld
      this.giveBackWithheldTime?.(withheld)
    }
    const judged = this.judge(server, {
      ...options,
      mutant,
      only,
      section,
      module,
      staticRun,
      cost,
      killed,
      interrupt,
      progress,
    })
    const first = await Promise.race([judged, expired])
    clearTimeout(timer)
    // Reset once this run's suite is over (after a Timeout it may end later, when the next run has its own clock).
    const reset = () => {
      if (this.withheld !== withheld) return
      this.withheld = undefined
      this.giveBackWithheldTime?.(undefined)
    }
    void judged.then(reset, reset)
    if (first !== TIMED_OUT) return first
    // Where the run was when its time ran out (the abort below ends the suite, which moves the phase on), and the
    // suite's last line then: the check it had come to.
    const phase = progress.phase
    const last = phase === 'running the suite' ? progress.lines?.at(-1) : undefined
    // No verdict in time: the suite is cut short, and the server, which may hang or be busy in a loop, replaced.
    interrupt.abort(`the mutant run's deadline of ${Math.round(limitMs)} ms passed`)
    if (this.server === server) this.server = undefined
    await server.kill()
    await this.settle(judged)
    this.recordCost(cost, server, server.accountedMicros ?? 0, {
      mutant,
      static: staticRun,
      timeout: phase,
    })
    return {
      status: MutantRunStatus.Timeout,
      reason: `no verdict within ${Math.round(limitMs)} ms (${this.timeoutFactor} x the section's clean run + ${this.timeoutMS} ms), ${phase}${last ? `, after: ${last.slice(0, 200)}` : ''}`,
    }
  }

  /** The mutant's run against `server`: its verdict, or Killed when the server died under it. */
  async judge(
    server,
    { mutant, only, section, module, staticRun, cost, killed, interrupt, progress, rejudged },
  ) {
    try {
      // Stryker's hit limit (100 x the mutant's hits in the dry run) is not passed on: with each section's coverage
      // kept to its own mutants it counted the hits of one section's checks only, and a mutant in a timer's pass
      // (the run scheduler's) passed it in ordinary runs, the instrumented code then throwing inside the server (12
      // of the runs section's first 46 runs reported Timeout so). A mutant that loops is caught by the deadline.
      // A limit no run reaches keeps the instrumented code counting the mutant's hits (see mutantRun: unreached).
      await server.send('activate', { mutant, hitLimit: Number.MAX_SAFE_INTEGER })
      const { report, output } = await this.runSuite(server, {
        mutant,
        only,
        section,
        module,
        interrupt: interrupt.signal,
        progress,
      })
      const fault = harnessFault(report)
      if (fault) {
        // Nothing ran: the worker takes another port, and a server allowing it, and the mutant is run again.
        this.receiverPort = await this.freePort()
        server.retire = true
        return { status: MutantRunStatus.Error, errorMessage: fault, harnessFault: true }
      }
      progress.phase = 'ending the run'
      let grace
      const ended = await Promise.race([
        server.send('end'),
        new Promise((resolve) => (grace = setTimeout(resolve, END_MS))),
      ])
      clearTimeout(grace)
      if (ended === undefined) {
        // The suite's verdict stands; the held server is replaced for the next run.
        if (this.server === server) this.server = undefined
        await server.kill()
        this.recordCost(cost, server, server.accountedMicros ?? 0, {
          mutant,
          static: staticRun,
          stalled: 'ending the run',
        })
        if (report && noticed(report)) {
          this.killOrder.add(section, report, module)
          return killed(killers(report))
        }
        if (!report) return killed(output)
        return {
          status: MutantRunStatus.Timeout,
          reason: `the suite passed, then the server did not answer within ${END_MS} ms (its event loop held)`,
        }
      }
      const { cpuMicros, hitCount } = ended
      this.recordCost(cost, server, cpuMicros, {
        mutant,
        static: staticRun,
        ...(rejudged ? { rejudged } : {}),
      })
      if (!report) return killed(output)
      if (!noticed(report))
        return { status: MutantRunStatus.Survived, nrOfTests: 1, unreached: !staticRun && hitCount === 0 }
      this.killOrder.add(section, report, module)
      return { ...killed(killers(report)), kill: { mutant, report, server, section } }
    } catch (err) {
      // The server died under the mutant: the suite noticed, as --reference would. (After the deadline this
      // result is not used, and the server is already gone.)
      this.logger.debug(`mutant ${mutant}: ${err?.stack ?? err}`)
      if (this.server === server) {
        await server.stop()
        this.server = undefined
      }
      return killed(String(err?.message ?? err).slice(0, 2000))
    }
  }
}

/** The runner's own options, as Stryker validates them (`conformanceSwitch: { timeoutMS }`). */
export const strykerValidationSchema = {
  $schema: 'http://json-schema.org/draft-07/schema',
  type: 'object',
  properties: {
    conformanceSwitch: {
      type: 'object',
      properties: {
        timeoutMS: {
          type: 'number',
          description:
            "The runner's own deadline for a mutant run: timeoutFactor x its section's dry-run time + this",
        },
      },
      additionalProperties: false,
    },
  },
}

export const strykerPlugins = [
  declareClassPlugin(PluginKind.TestRunner, 'conformance-switch', ConformanceSwitchRunner),
]
