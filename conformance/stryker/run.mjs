#!/usr/bin/env node
/**
 * `npm run conformance:stryker`: StrykerJS mutates the reference server's spec-bearing modules (scope.mjs) and the
 * conformance suite, run against each mutated reference, is the only test. Writes Stryker's HTML and JSON reports to
 * reports/stryker/ and a per-spec-section table (killed at core, by profile only, survived, annotated, timeout) to
 * reports/stryker/sections.json, and prints the time it took.
 *
 *   node conformance/stryker/run.mjs [--since REF [--max-mutants N]] [--section TEXT] [--incremental] [--mutate GLOB,...] [--concurrency N] [--runner switch|command] [--postgres URL | --also-postgres URL [--uncovered-only]] [--replicas N]
 *
 * --since REF    mutate only the lines of the scope's modules changed since REF (git diff), the quick run
 * --max-mutants N with --since: take the changed ranges in order while their mutants number at most N
 * --incremental  Stryker's incremental mode: mutants of unchanged code keep their last result
 * --mutate       a subset of the scope (globs, or file:line-line ranges as Stryker takes them)
 * --section TEXT one spec section of scope.mjs (the first whose name contains TEXT), e.g. "idempotency"
 * --runner       switch (the default): one reference server per worker, the mutant switched inside it
 *                (switch-runner.mjs); command: a fresh reference, suite and key-issuing process per mutant
 *                (suite.mjs through Stryker's command runner), the slow way kept to compare against
 * --concurrency N Stryker workers (default: three per CPU): a mutant run mostly waits (for the server's retries,
 *                the stream's frames, a run's steps); two per CPU left about a third of the CPU time idle, and four
 *                per CPU ended no sooner than three
 * --postgres URL the reference on PostgreSQL instead of SQLite: URL is a server's admin URL (database `postgres`), or
 *                `auto` for a throwaway server the run starts and stops (throwaway-postgres.ts, as the tests start theirs);
 *                each worker's server gets a database of its own there, dropped at its end. The code a store with
 *                shared counters takes (the rate-limit step's count alongside a read) runs only there.
 * --also-postgres URL after the run on SQLite, the mutants it left alive (survived, no coverage) are judged again
 *                with the reference on PostgreSQL (URL as for --postgres, `auto` too), and one the suite kills there counts as
 *                killed (stores.mjs): code only one store runs is judged where it runs. The reports are the merged
 *                ones; the second pass's own are in reports/stryker/postgres/.
 * --uncovered-only with --also-postgres: the second pass judges only the mutants the SQLite pass never reached
 *                (NoCoverage), not its survivors: the code only PostgreSQL runs (a unit whose claim goes with its
 *                writes, counts held to a COMMIT), at a small part of the cost of judging every survivor again
 * --replicas N   with --postgres (or --also-postgres's second pass): each worker judges N reference replicas on one
 *                database behind a round-robin balancer, every replica with the mutant active (switch-runner.mjs
 *                ReplicaSet): what only another replica's change makes happen (the key watch, the change feed's
 *                wake-ups, the leases of the run scheduler and the outbox) is judged, as a scaled-out deployment
 *                runs it.
 *
 * Each mutant costs one suite run that stops at the first core failure (--bail) and runs only the check families
 * of the mutated module's section (scope.mjs CHECKS), with fresh identities in the store (switch) or a fresh store
 * (command): outcomes never depend on the mutants before.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { asMutate, changedRanges, countMutants } from './changes.mjs'
import { IGNORERS } from './ignorers.mjs'
import { coreCouldNotRun } from './noticed.mjs'
import {
  guideFile,
  paceLine,
  project,
  readCostLines,
  readCosts,
  readGuide,
  withoutDryRun,
  writeGuide,
} from './pace.mjs'
import { EXCLUDED, SCOPE, scopeGlobs, sectionOf } from './scope.mjs'
import { serverStoresDir } from './server-stores.mjs'
import { ALIVE, aliveKeys, aliveRanges, mergeSecondPass, UNCOVERED, withReport } from './stores.mjs'

const root = join(import.meta.dirname, '..', '..')
const out = join(root, 'reports', 'stryker')
const USAGE =
  'usage: node conformance/stryker/run.mjs [--since REF [--max-mutants N]] [--section TEXT] [--incremental] ' +
  '[--mutate GLOB,...] [--concurrency N] [--runner switch|command] [--postgres URL | --also-postgres URL [--uncovered-only]] ' +
  '[--replicas N]'
/** The options, or the usage: on `--help` (exit 0) and on an option it does not know (exit 2, with the reason). */
function options() {
  try {
    return parseArgs({
      options: {
        since: { type: 'string' },
        'max-mutants': { type: 'string' },
        incremental: { type: 'boolean' },
        mutate: { type: 'string' },
        section: { type: 'string' },
        concurrency: { type: 'string' },
        runner: { type: 'string' },
        postgres: { type: 'string' },
        'also-postgres': { type: 'string' },
        'uncovered-only': { type: 'boolean' },
        replicas: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values
  } catch (error) {
    console.error(`conformance:stryker: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`)
    process.exit(2)
  }
}
const values = options()
if (values.help) {
  console.log(
    `${USAGE}\n(each option is described at the top of conformance/stryker/run.mjs and in conformance/README.md)`,
  )
  process.exit(0)
}

let mutate = values.mutate ? values.mutate.split(',') : scopeGlobs()
if (values.runner !== undefined && values.runner !== 'command' && values.runner !== 'switch') {
  console.error(`conformance:stryker: --runner is switch (the default) or command, not ${values.runner}`)
  process.exit(2)
}
if (values.postgres !== undefined && values['also-postgres'] !== undefined) {
  console.error('conformance:stryker: --postgres and --also-postgres exclude each other')
  process.exit(2)
}
if (values['also-postgres'] !== undefined && values.runner === 'command') {
  console.error('conformance:stryker: --also-postgres runs with the switch runner only')
  process.exit(2)
}
if (values['uncovered-only'] && values['also-postgres'] === undefined) {
  console.error(
    'conformance:stryker: --uncovered-only chooses what --also-postgres judges again: it needs --also-postgres',
  )
  process.exit(2)
}
/**
 * `auto` for --postgres or --also-postgres: a throwaway PostgreSQL (throwaway-postgres.ts), started when the run needs
 * it and stopped with the run; its admin URL.
 */
let throwaway
async function postgresUrl(option) {
  if (option !== 'auto') return option
  if (!throwaway) {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'throwaway-postgres.ts')],
      { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
    )
    // However this process ends, the server's process sees its stdin end and stops the server.
    process.once('exit', () => child.kill('SIGTERM'))
    throwaway = { child, url: firstJsonLine(child).then((line) => line.url) }
  }
  return throwaway.url
}

/** The child's first line of JSON on stdout (the server's URL), or the reason it exited before printing one. */
function firstJsonLine(child) {
  return new Promise((resolve, reject) => {
    let out = ''
    const onData = (chunk) => {
      out += chunk
      const end = out.indexOf('\n')
      if (end < 0) return
      child.stdout.off('data', onData)
      child.off('exit', onExit)
      resolve(JSON.parse(out.slice(0, end)))
    }
    const onExit = (code) =>
      reject(new Error(`the throwaway PostgreSQL exited with ${code} before it took connections`))
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', onData)
    child.once('exit', onExit)
  })
}

/** Stops the throwaway PostgreSQL, if the run started one. */
async function stopThrowaway() {
  if (!throwaway) return
  const { child } = throwaway
  if (child.exitCode === null && child.signalCode === null) {
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
  }
}

if (values.postgres !== undefined && values.runner === 'command') {
  console.error('conformance:stryker: --postgres runs with the switch runner only')
  process.exit(2)
}
/** --replicas N, checked below: the reference servers each worker judges a mutant on. */
const replicas = values.replicas === undefined ? 1 : Number(values.replicas)
if (values.replicas !== undefined) {
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 8) {
    console.error(`conformance:stryker: --replicas is a whole number from 1 to 8, not ${values.replicas}`)
    process.exit(2)
  }
  if (replicas > 1 && values.postgres === undefined && values['also-postgres'] === undefined) {
    console.error(
      'conformance:stryker: --replicas shares one database: it needs --postgres or --also-postgres',
    )
    process.exit(2)
  }
  if (values.runner === 'command') {
    console.error('conformance:stryker: --replicas runs with the switch runner only')
    process.exit(2)
  }
  // --postgres: every pass; --also-postgres: its second pass only (set there).
  if (values.postgres !== undefined) process.env.STRYKER_REPLICAS = String(replicas)
}
if (values.section) {
  const name = Object.keys(SCOPE).find((s) => s.includes(values.section))
  if (!name) {
    console.error(
      `conformance:stryker: no section matches --section ${values.section}: ${Object.keys(SCOPE).join('; ')}`,
    )
    process.exit(2)
  }
  mutate = [...SCOPE[name], ...EXCLUDED]
}
if (values.since) {
  const ranges = changedRanges(root, values.since)
  if (ranges.length === 0) {
    console.log(
      `conformance:stryker: no line of a spec-bearing module changed since ${values.since}; nothing to mutate (${process.uptime().toFixed(1)} s)`,
    )
    process.exit(0)
  }
  // A CI job's time is bounded: the changed ranges are taken in order while their mutants fit --max-mutants.
  const counts = await countMutants(root, ranges)
  const cap = values['max-mutants'] ? Number(values['max-mutants']) : Number.POSITIVE_INFINITY
  const taken = []
  let total = 0
  for (const [i, r] of ranges.entries()) {
    if (total + counts[i] > cap && taken.length > 0) continue
    taken.push(r)
    total += counts[i]
  }
  const left = ranges.filter((r) => !taken.includes(r))
  console.log(
    `conformance:stryker: ${ranges.length} changed range(s) of spec-bearing modules since ${values.since}, ${counts.reduce((a, b) => a + b, 0)} mutants; mutating ${taken.length} range(s), ${total} mutants${left.length > 0 ? ` (--max-mutants ${cap} leaves out ${left.map(asMutate).join(', ')})` : ''}`,
  )
  if (total === 0) {
    console.log(
      `conformance:stryker: the changed lines hold no mutant; nothing to run (${process.uptime().toFixed(1)} s)`,
    )
    process.exit(0)
  }
  mutate = taken.map(asMutate)
}
const suiteReports = join(out, 'suite')
rmSync(suiteReports, { recursive: true, force: true })
mkdirSync(suiteReports, { recursive: true })
process.env.STRYKER_SUITE_REPORTS = suiteReports
// The judged servers' SQLite stores in memory where there is a tmpfs (server-stores.mjs); switch-runner.mjs reads it.
const serverStores = serverStoresDir()
if (serverStores) process.env.STRYKER_SERVER_STORES = serverStores

/** Workers: a mutant run mostly waits on the server's own clock, so two per CPU keep the CPUs busy. */
const concurrency = Number(values.concurrency ?? 3 * availableParallelism())
/** The pace of the last run over this scope with as many workers that reached its end (pace.mjs). */
const guidePath = guideFile(out, mutate, concurrency)
const guide = values.incremental === true ? undefined : readGuide(guidePath)
// Loaded only now: a quick run with nothing to mutate ends before StrykerJS loads.
const { Stryker } = await import('@stryker-mutator/core')
/** One Stryker run over `mutate`, its reports written to `reportsDir` (Stryker's HTML and JSON). */
function strykerPass(mutate, reportsDir) {
  return new Stryker({
    packageManager: 'npm',
    ...(values.runner === 'command'
      ? { testRunner: 'command', commandRunner: { command: 'node conformance/stryker/suite.mjs' } }
      : {
          // One reference server per worker with the active mutant switched inside it (switch-runner.mjs); the
          // dry run's coverage tells static mutants (a server started with them) from runtime ones, and leaves
          // the mutants no check reaches NoCoverage without a run.
          testRunner: 'conformance-switch',
        }),
    // Whole classes of mutants no spec statement is about (log lines, metrics): ignored with their reason
    // (ignorers.mjs), counted as annotated.
    appendPlugins: [
      join(import.meta.dirname, 'ignorers.mjs'),
      ...(values.runner === 'command' ? [] : [join(import.meta.dirname, 'switch-runner.mjs')]),
    ],
    ignorers: IGNORERS,
    // The reference runs compiled (bin/agentops.mjs runs dist/): the sandbox builds its mutated sources once, and
    // the suite too (the runners run conformance/dist).
    buildCommand: 'node conformance/stryker/build.mjs',
    coverageAnalysis: values.runner === 'command' ? 'off' : 'perTest',
    mutate,
    ignorePatterns: [
      'dist',
      'docs',
      'bench',
      'test',
      'reports',
      'coverage',
      '.agentops',
      'conformance/bundle',
    ],
    concurrency,
    // A mutant's run may take timeoutFactor x the dry-run time of its section's checks + conformanceSwitch.timeoutMS
    // (the switch runner's own deadline, the time the run waited for a CPU given back): the suite's per-request
    // timeout, so one request that never answers fails its check rather than the run. Stryker's own timeout (the
    // same factor + timeoutMS) is the last resort for a runner that itself hangs: it replaces the worker and gives
    // no time back on a busy machine (at load 17 under `nice -n 19`, runs of 5 s of CPU took 45-65 s and Stryker's
    // 60 s timed 8 of 290 out), so it is set far above any run.
    timeoutMS: 180_000,
    timeoutFactor: 1.5,
    ...(values.runner === 'command' ? {} : { conformanceSwitch: { timeoutMS: 10_000 } }),
    incremental: values.incremental === true && reportsDir === out,
    incrementalFile: join(out, 'incremental.json'),
    reporters: ['html', 'json', 'clear-text', 'progress'],
    htmlReporter: { fileName: join(reportsDir, 'index.html') },
    jsonReporter: { fileName: join(reportsDir, 'mutation.json') },
    tempDirName: join(root, '.stryker-tmp'),
    cleanTempDir: true,
    disableTypeChecks: true,
  })
}
// Each worker's reference server gets a database of its own on this server (switch-runner.mjs). Resolved here, once
// every option is known to be good and there is something to mutate: `auto` starts a server.
if (values.postgres !== undefined) process.env.STRYKER_POSTGRES_ADMIN_URL = await postgresUrl(values.postgres)
const started = Date.now()
const stryker = strykerPass(mutate, out)
// Every 5 minutes, where the run stands against the last one over this scope (Stryker's estimate misleads on a long run).
const pace = guide
  ? setInterval(() => {
      const line = paceLine(project(readCosts(suiteReports), guide.costs), started, Date.now(), guide.seconds)
      if (line) console.log(line)
    }, 300_000)
  : undefined
pace?.unref()
if (!guide)
  console.log(
    'conformance:stryker: no earlier run over this scope with as many workers to project the end from',
  )
const results = await stryker.runMutationTest()
if (pace) clearInterval(pace)
const firstSeconds = (Date.now() - started) / 1000

/**
 * `--also-postgres URL`: the mutants the first pass left alive judged again with the reference on PostgreSQL
 * (stores.mjs); Stryker's reports in reports/stryker/postgres/, the merged ones in reports/stryker/.
 */
const secondReports = join(out, 'postgres')
const suiteReportsPg = join(secondReports, 'suite')
let report = JSON.parse(readFileSync(join(out, 'mutation.json'), 'utf8'))
let secondPass
/** Where the second pass judges, as its kills' reasons and the summary name it. */
const secondStore = replicas > 1 ? `on ${replicas} PostgreSQL replicas` : 'on PostgreSQL'
if (values['also-postgres'] !== undefined) {
  const [judged, leftAs] = values['uncovered-only'] ? [UNCOVERED, 'uncovered'] : [ALIVE, 'alive']
  const ranges = aliveRanges(report, judged)
  rmSync(secondReports, { recursive: true, force: true })
  mkdirSync(suiteReportsPg, { recursive: true })
  console.log(
    `conformance:stryker: ${ranges.length} mutant place(s) left ${leftAs} on SQLite, judged again with the reference on PostgreSQL`,
  )
  if (ranges.length > 0) {
    const at = Date.now()
    process.env.STRYKER_POSTGRES_ADMIN_URL = await postgresUrl(values['also-postgres'])
    if (values.replicas !== undefined) process.env.STRYKER_REPLICAS = String(replicas)
    process.env.STRYKER_SUITE_REPORTS = suiteReportsPg
    const judgeOnly = join(secondReports, 'alive.json')
    writeFileSync(judgeOnly, JSON.stringify(aliveKeys(report, judged)))
    process.env.STRYKER_JUDGE_ONLY = judgeOnly
    await strykerPass(ranges, secondReports).runMutationTest()
    const second = JSON.parse(readFileSync(join(secondReports, 'mutation.json'), 'utf8'))
    const merged = mergeSecondPass(report, second, secondStore)
    report = merged.report
    writeFileSync(join(out, 'mutation.json'), JSON.stringify(report))
    writeFileSync(join(out, 'index.html'), withReport(readFileSync(join(out, 'index.html'), 'utf8'), report))
    secondPass = {
      judged: leftAs,
      places: ranges.length,
      seconds: Math.round((Date.now() - at) / 1000),
      killed: merged.changed,
    }
  }
}
// Every pass is over: a throwaway PostgreSQL (`auto`) is no longer needed.
await stopThrowaway()
const seconds = (Date.now() - started) / 1000

/**
 * How the suite killed a mutant (from its JSON report in `dir`): at core when a core check failed or could not
 * (fully) run against it (the clean run passes them all, so a passing verdict was out of reach either way), else by
 * profile failures only. Whichever the run met first: a core check that could not run counts at core also when a
 * profile check failed too.
 */
function killedBy(dir, id) {
  const file = join(dir, `${id}.json`)
  if (!existsSync(file)) return 'core'
  const report = JSON.parse(readFileSync(file, 'utf8'))
  const coreNoticed =
    report.results.some((r) => r.level === 'core' && r.outcome === 'fail') || coreCouldNotRun(report)
  return coreNoticed || report.verdict?.verdict !== 'NOT CONFORMANT' ? 'core' : 'profile'
}

const sections = {}
for (const [file, { mutants }] of Object.entries(report.files)) {
  const section = sectionOf(file) ?? '(outside the scope)'
  sections[section] ??= { killedAtCore: 0, killedByProfileOnly: 0, survived: 0, annotated: 0, timeout: 0 }
  const row = sections[section]
  for (const m of mutants) {
    if (m.status === 'Ignored') row.annotated++
    else if (m.status === 'Timeout') row.timeout++
    else if (m.status === 'Killed') {
      const level =
        m.secondId === undefined ? killedBy(suiteReports, m.id) : killedBy(suiteReportsPg, m.secondId)
      row[level === 'core' ? 'killedAtCore' : 'killedByProfileOnly']++
    } else if (m.status === 'Survived' || m.status === 'NoCoverage') row.survived++
  }
}
const total = Object.values(sections).reduce(
  (t, r) => ({
    killedAtCore: t.killedAtCore + r.killedAtCore,
    killedByProfileOnly: t.killedByProfileOnly + r.killedByProfileOnly,
    survived: t.survived + r.survived,
    annotated: t.annotated + r.annotated,
    timeout: t.timeout + r.timeout,
  }),
  { killedAtCore: 0, killedByProfileOnly: 0, survived: 0, annotated: 0, timeout: 0 },
)
/**
 * What the runs cost, from the switch runner's per-run records (costs-*.jsonl): CPU seconds of the suite (the
 * worker) and of the reference server per mutant run, static ones (a server started for them) apart.
 */
function runCosts(runs) {
  if (runs.length === 0) return undefined
  const sum = (rs) => {
    const cpu = rs.reduce((t, r) => t + r.suiteCpuMs + r.serverCpuMs, 0) / 1000
    return {
      runs: rs.length,
      cpuSeconds: Math.round(cpu),
      cpuSecondsPerRun: rs.length ? Number((cpu / rs.length).toFixed(2)) : null,
      suiteCpuSeconds: Math.round(rs.reduce((t, r) => t + r.suiteCpuMs, 0) / 1000),
      serverCpuSeconds: Math.round(rs.reduce((t, r) => t + r.serverCpuMs, 0) / 1000),
    }
  }
  const mutantRuns = runs.filter((r) => r.mutant !== 'dry run' && !r.confirmation)
  // Kills looked at again on the clean server (switch-runner.mjs confirmKill): failed = the server was broken, and
  // the mutant was judged again on a fresh one.
  const confirmations = runs.filter((r) => r.confirmation)
  // Where the runner's deadline caught the runs it cut short (issuing keys, running the suite, ...).
  const timeoutsByPhase = {}
  for (const r of mutantRuns)
    if (r.timeout) timeoutsByPhase[r.timeout] = (timeoutsByPhase[r.timeout] ?? 0) + 1
  return {
    timeoutsByPhase,
    // Runs whose server did not answer `end` within a few seconds of the suite's verdict (replaced, not waited on).
    stalledAtEnd: mutantRuns.filter((r) => r.stalled).length,
    dryRun: sum(runs.filter((r) => r.mutant === 'dry run')),
    mutantRuns: sum(mutantRuns),
    staticRuns: sum(mutantRuns.filter((r) => r.static)),
    rejudgedRuns: sum(mutantRuns.filter((r) => r.rejudged)),
    confirmations: {
      ...sum(confirmations),
      serverBroken: confirmations.filter((r) => r.confirmation === 'failed').length,
    },
  }
}
const costLines = readCostLines(suiteReports)
const costs = runCosts(costLines.flat())
// A Timeout counts as killed (Stryker's "detected"): the suite did not pass within its time.
const judged = total.killedAtCore + total.killedByProfileOnly + total.survived + total.timeout
const summary = {
  seconds: Math.round(seconds),
  mutants: results.length,
  secondsPerMutant: Number((seconds / Math.max(1, results.length)).toFixed(1)),
  concurrency,
  mutate,
  killed: judged ? (total.killedAtCore + total.killedByProfileOnly + total.timeout) / judged : null,
  killedAtCore: judged ? total.killedAtCore / judged : null,
  annotated: results.length ? total.annotated / results.length : null,
  sections,
  total,
  ...(secondPass
    ? { secondPass: { ...secondPass, costs: runCosts(readCostLines(suiteReportsPg).flat()) ?? null } }
    : {}),
  ...(costs ? { costs } : {}),
}
writeFileSync(join(out, 'sections.json'), `${JSON.stringify(summary, null, 2)}\n`)
// This run's pace, the guide of the next one over the same scope (an incremental run judged only part of it).
const paceNow = withoutDryRun(costLines)
if (values.incremental !== true && paceNow.length > 0) writeGuide(guidePath, firstSeconds, paceNow)
console.log(
  '\n| spec section | killed at core | by profile only | survived | annotated | timeout |\n|---|---|---|---|---|---|',
)
for (const [s, r] of Object.entries(sections))
  console.log(
    `| ${s} | ${r.killedAtCore} | ${r.killedByProfileOnly} | ${r.survived} | ${r.annotated} | ${r.timeout} |`,
  )
const pct = (x) => (x === null ? '-' : `${(x * 100).toFixed(1)} %`)
console.log(
  `\nconformance:stryker: ${results.length} mutants in ${seconds.toFixed(0)} s (${(seconds / Math.max(1, results.length)).toFixed(1)} s each); killed ${pct(summary.killed)} of those not annotated, ${pct(summary.killedAtCore)} at core; annotated ${pct(summary.annotated)}; HTML report ${relative(root, join(out, 'index.html'))}`,
)
if (secondPass)
  console.log(
    `conformance:stryker: the second pass ${secondStore} judged ${secondPass.places} place(s) in ${secondPass.seconds} s and killed ${secondPass.killed} mutant(s) the first left ${secondPass.judged} (the first pass took ${firstSeconds.toFixed(0)} s; the cost line below is the first pass's, the second's is in sections.json)`,
  )
// Run on SQLite alone, the mutants it never reached include the code only PostgreSQL runs: say how to judge them.
if (values.postgres === undefined && values['also-postgres'] === undefined) {
  const uncovered = aliveKeys(report, UNCOVERED).length
  if (uncovered > 0)
    console.log(
      `conformance:stryker: ${uncovered} mutant(s) never reached on SQLite, among them the code only PostgreSQL runs: --also-postgres auto --uncovered-only judges them there`,
    )
}
if (costs)
  console.log(
    `conformance:stryker: ${costs.mutantRuns.runs} mutant runs cost ${costs.mutantRuns.cpuSeconds} s of CPU, ${costs.mutantRuns.cpuSecondsPerRun} s each (suite ${costs.mutantRuns.suiteCpuSeconds} s, reference ${costs.mutantRuns.serverCpuSeconds} s); ${costs.staticRuns.runs} of them static, ${costs.staticRuns.cpuSecondsPerRun ?? '-'} s each (${costs.rejudgedRuns.runs} runtime survivors whose code never ran while active, judged again so); the dry run ${costs.dryRun.cpuSeconds} s; timeouts at the runner's deadline: ${JSON.stringify(costs.timeoutsByPhase)}; servers held after the verdict (replaced): ${costs.stalledAtEnd}; kills looked at again on the clean server: ${costs.confirmations.runs} (${costs.confirmations.cpuSeconds} s of CPU), the server broken in ${costs.confirmations.serverBroken} (the mutant judged again on a fresh one)`,
  )
