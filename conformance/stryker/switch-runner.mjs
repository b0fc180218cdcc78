/**
 * The `conformance-switch` test runner of `npm run conformance:stryker` (a StrykerJS plugin): ONE reference server
 * per Stryker worker, built from the sandbox's instrumented sources, with the active mutant switched inside it for
 * each run (server-switch.mjs, preloaded into it), and the conformance suite called in this process
 * (conformance/dist's `main`, once imported) instead of a new suite, server and key-issuing process per mutant.
 *
 * - Independence: every run gets fresh identities (its own workspaces and keys, issued into the server's store with
 *   the mutant already active, as `--reference` issues them), so what one mutant left behind (resources, rate-limit
 *   windows, quotas, idempotency keys) is in workspaces no later run uses; the suite undoes its own resources as
 *   against any deployment. Each run has its own webhook receiver on the worker's one port (the server's one
 *   allowed private target).
 * - Static mutants (executed only while the server loads and starts; Stryker's dry run sees them in the static
 *   coverage the instrumented code records before the runner sets a test id) get a server started with the mutant
 *   active (`reloadEnvironment`, `mutantActivation: 'static'`), and the next runtime mutant a clean one again.
 *   Mutants the dry run never reached are NoCoverage without a run.
 * - A hanging mutant: Stryker's timeout recovers the worker (dispose, a new runner); the server exits with the
 *   worker's IPC channel. A mutant hit more often than Stryker's hit limit is a Timeout too.
 * - Each run stops at the first core failure (--bail) and runs only the check families of the mutated module's
 *   section (scope.mjs CHECKS); the dry run runs every check. Each run's JSON report is kept under
 *   STRYKER_SUITE_REPORTS, named by the mutant, for run.mjs's per-section table.
 */
import { spawn } from 'node:child_process'
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { commonTokens, declareClassPlugin, PluginKind, tokens } from '@stryker-mutator/api/plugin'
import { DryRunStatus, MutantRunStatus, TestStatus } from '@stryker-mutator/api/test-runner'
import { killers, noticed } from './noticed.mjs'
import { checksFor, sectionOf } from './scope.mjs'

/** The one "test" Stryker sees: the conformance suite. */
export const SUITE_TEST = 'conformance suite'
/** The stream replay window the suite's --reference runs the server with (REFERENCE_REPLAY_WINDOW). */
const REPLAY_WINDOW = 20

/** The identities `--reference` provisions, in the order the suite's token flags take them, in fresh workspaces. */
export function keyRequests(run) {
  const ws = (name) => ['--workspace', `stryker-${run}-${name}`]
  const roomy = [
    '--tier',
    'enterprise',
    '--limit-per-hour',
    '1000000',
    '--burst-limit',
    '100000',
    '--quota',
    'agents=1000000000,tools=1000000000,webhooks=1000000000,destinations=1000000000,idempotency_keys=1000000000',
  ]
  return [
    ['token', [...ws('primary'), ...roomy]],
    ['expired-token', [...ws('primary'), '--expires-in', '1']],
    ['second-token', [...ws('second'), ...roomy]],
    ['narrow-token', [...ws('primary'), '--scopes', 'agents:read']],
    ['other-scope-token', [...ws('primary'), '--scopes', 'tasks:read']],
    ['limited-token', [...ws('limited'), '--limit-per-hour', '1000', '--burst-limit', '5']],
    ['limited-peer-token', [...ws('limited')]],
  ]
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

/** A reference server started from the sandbox (`bin/agentops.mjs serve`) with the control channel preloaded. */
class SwitchedServer {
  constructor(root, receiverPort, staticMutant) {
    this.root = root
    this.staticMutant = staticMutant
    // Inside the sandbox, which Stryker removes at the end: a worker Stryker kills (a timeout) leaves nothing behind.
    this.dir = mkdtempSync(join(root, '.switch-server-'))
    this.databaseUrl = `sqlite:${join(this.dir, 'db.sqlite')}`
    this.receiverPort = receiverPort
    this.pending = new Map()
    this.nextId = 0
    this.output = ''
  }

  async start() {
    const port = await freePort()
    this.baseUrl = `http://127.0.0.1:${port}`
    const receiver = `127.0.0.1:${this.receiverPort}`
    const env = {
      // As the suite's --reference starts it (conformance/src/reference.ts): quick retries and heartbeats.
      AGENTOPS_WEBHOOK_RETRY_BASE_MS: '500',
      AGENTOPS_WEBHOOK_POLL_MS: '250',
      AGENTOPS_STREAM_HEARTBEAT_MS: '1000',
      AGENTOPS_STREAM_MAX_REPLAY: String(REPLAY_WINDOW),
      ...process.env,
      AGENTOPS_WEBHOOK_PRIVATE_TARGETS: receiver,
      AGENTOPS_DESTINATION_PRIVATE_TARGETS: receiver,
      AGENTOPS_STRYKER_DATABASE_URL: this.databaseUrl,
    }
    delete env.__STRYKER_ACTIVE_MUTANT__
    if (this.staticMutant !== undefined) env.__STRYKER_ACTIVE_MUTANT__ = this.staticMutant
    const preload = pathToFileURL(join(import.meta.dirname, 'server-switch.mjs')).href
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

  send(cmd, fields = {}) {
    if (!this.alive) return Promise.reject(new Error(`the reference server is not running:\n${this.tail()}`))
    const id = ++this.nextId
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.child.send({ id, cmd, ...fields })
    })
  }

  async stop() {
    if (this.alive) {
      this.child.kill('SIGTERM')
      let grace
      await Promise.race([this.exited, new Promise((r) => (grace = setTimeout(r, 5000)))])
      clearTimeout(grace)
      if (this.alive) this.child.kill('SIGKILL')
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

export class ConformanceSwitchRunner {
  static inject = tokens(commonTokens.logger)

  /**
   * Stryker passes the logger only. A test passes `root` (a sandbox other than the working directory), `suite` (the
   * suite's `main`, e.g. from its sources) and `dryRunOnly` (check prefixes for the dry run instead of all).
   */
  constructor(logger, { root = process.cwd(), suite, dryRunOnly } = {}) {
    this.logger = logger
    // Stryker's worker runs in the sandbox: its instrumented build (dist/) and its compiled suite.
    this.root = root
    this.suite = suite
    this.dryRunOnly = dryRunOnly
    this.reports = process.env.STRYKER_SUITE_REPORTS
    this.runs = 0
  }

  /** The running server's process id (a test tells a reused server from a fresh one by it). */
  get serverPid() {
    return this.server?.alive ? this.server.child.pid : undefined
  }

  capabilities() {
    return { reloadEnvironment: true }
  }

  async init() {
    if (!this.suite) {
      const dist = join(this.root, 'conformance', 'dist')
      this.suite = (await import(pathToFileURL(join(dist, 'cli.js')).href)).main
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
    this.receiverPort = await freePort()
    this.configDir = mkdtempSync(join(this.root, '.switch-suite-'))
    this.configFile = join(this.configDir, 'conformance.json')
    writeFileSync(this.configFile, JSON.stringify({ stream: { replayWindow: REPLAY_WINDOW } }))
  }

  async dispose() {
    await this.server?.stop()
    this.server = undefined
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

  /** A server for the next run: the running one, or a fresh one (with `staticMutant` active from its start). */
  async serverFor(fresh, staticMutant) {
    if (this.server?.alive && !fresh) return this.server
    await this.server?.stop()
    this.server = new SwitchedServer(this.root, this.receiverPort, staticMutant)
    try {
      await this.server.start()
    } catch (err) {
      await this.server.stop()
      this.server = undefined
      throw err
    }
    await this.server.send('track', { testId: SUITE_TEST })
    return this.server
  }

  /** One suite run against the server: fresh identities, the suite's report back (or why there is none). */
  async runSuite(server, { mutant, only }) {
    const run = `${process.pid}-${++this.runs}`
    const requests = keyRequests(run)
    const { tokens: issued } = await server.send('keys', { requests: requests.map(([, args]) => args) })
    const json = join(this.reports ?? this.configDir, `${mutant ?? 'clean'}.json`)
    mkdirSync(join(json, '..'), { recursive: true })
    const argv = [
      '--base-url',
      server.baseUrl,
      '--graphql-url',
      `${server.baseUrl}/v1/graphql`,
      ...requests.flatMap(([flag], i) => [`--${flag}`, issued[i]]),
      '--receiver-port',
      String(this.receiverPort),
      '--config',
      this.configFile,
      '--strict-profile',
      ...(mutant ? ['--bail'] : []),
      ...(only ? ['--only', only.join(',')] : []),
      '--json',
      json,
    ]
    const lines = []
    const io = { out: (l) => lines.push(l), err: (l) => lines.push(l) }
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('AGENTOPS_CONFORMANCE_')),
    )
    const code = await this.suite(argv, env, io)
    let report
    try {
      report = JSON.parse(readFileSync(json, 'utf8'))
    } catch {
      report = undefined
    }
    return { code, report, output: lines.slice(-40).join('\n') }
  }

  async dryRun() {
    const started = Date.now()
    const cost = this.startCost()
    try {
      const server = await this.serverFor(true, undefined)
      await server.send('activate', { mutant: undefined, hitLimit: undefined })
      const { report, output } = await this.runSuite(server, { only: this.dryRunOnly })
      const { coverage, cpuMicros } = await server.send('end')
      this.recordCost(cost, server, cpuMicros, { mutant: 'dry run', static: false })
      const timeSpentMs = Date.now() - started
      const test = { id: SUITE_TEST, name: SUITE_TEST, timeSpentMs }
      const failed = !report || noticed(report)
      return {
        status: DryRunStatus.Complete,
        tests: [
          failed
            ? {
                ...test,
                status: TestStatus.Failed,
                failureMessage: report ? `${killers(report)}\n${output}` : output,
              }
            : { ...test, status: TestStatus.Success },
        ],
        mutantCoverage: coverage ?? { static: {}, perTest: {} },
      }
    } catch (err) {
      return { status: DryRunStatus.Error, errorMessage: String(err?.stack ?? err) }
    }
  }

  async mutantRun(options) {
    const mutant = options.activeMutant.id
    const section = sectionOf(relative(this.root, options.sandboxFileName))
    const only = section ? checksFor(section) : undefined
    const staticRun = options.mutantActivation === 'static'
    const cost = this.startCost()
    try {
      // A static mutant needs a server that loads with it; after one, a runtime mutant needs a clean server again.
      const fresh = staticRun || options.reloadEnvironment || this.server?.staticMutant !== undefined
      const server = await this.serverFor(fresh, staticRun ? mutant : undefined)
      await server.send('activate', { mutant, hitLimit: options.hitLimit })
      const { report, output } = await this.runSuite(server, { mutant, only })
      const { hitCount, cpuMicros } = await server.send('end')
      this.recordCost(cost, server, cpuMicros, { mutant, static: staticRun })
      if (options.hitLimit !== undefined && hitCount > options.hitLimit)
        return {
          status: MutantRunStatus.Timeout,
          reason: `hit limit reached (${hitCount}/${options.hitLimit})`,
        }
      if (!report)
        return {
          status: MutantRunStatus.Killed,
          killedBy: [SUITE_TEST],
          failureMessage: output,
          nrOfTests: 1,
        }
      return noticed(report)
        ? {
            status: MutantRunStatus.Killed,
            killedBy: [SUITE_TEST],
            failureMessage: killers(report),
            nrOfTests: 1,
          }
        : { status: MutantRunStatus.Survived, nrOfTests: 1 }
    } catch (err) {
      // The server died under the mutant (or could not start with it): the suite noticed, as --reference would.
      this.logger.debug(`mutant ${mutant}: ${err?.stack ?? err}`)
      await this.server?.stop()
      this.server = undefined
      return {
        status: MutantRunStatus.Killed,
        killedBy: [SUITE_TEST],
        failureMessage: String(err?.message ?? err).slice(0, 2000),
        nrOfTests: 1,
      }
    }
  }
}

export const strykerPlugins = [
  declareClassPlugin(PluginKind.TestRunner, 'conformance-switch', ConformanceSwitchRunner),
]
