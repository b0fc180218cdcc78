/**
 * Mutation testing of the suite: starts the reference server once, runs the clean suite through a pass-through
 * proxy (every check must pass), then each mutant (each must make at least one of its target checks fail, and
 * every target that fails must have passed clean). Prints the mutation score; exits 1 if a mutant survives, the
 * clean run fails, or a dialect (a correct deployment with other gap decisions) fails a core check or a profile
 * check that quotes a spec sentence.
 *
 *   npx tsx conformance/mutants/run.ts [--only mutant-id,...] [--dialect] [--lanes N] [--verbose]
 *
 * `--dialect` runs the dialects besides the clean run and the `--only` mutants (none without `--only`). `--lanes`
 * (default 2, or AGENTOPS_MUTANT_LANES) is how many references, each behind its own proxy, share the work.
 * `--verbose` gives each profile check a dialect fails with its message.
 */
import { parseArgs } from 'node:util'
import { listenPort, testPort } from '../../test/support/ports.js'
import type { Check } from '../src/check.js'
import { ALL_CHECKS } from '../src/checks/index.js'
import { resolveConfig, type SuiteConfig } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { startLocalNats } from '../src/nats.js'
import { WebhookReceiver } from '../src/receiver.js'
import { REFERENCE_REPLAY_WINDOW, REFERENCE_WEBHOOK_MAX_ATTEMPTS, startReference } from '../src/reference.js'
import { runChecks, selectChecks } from '../src/runner.js'
import { type CheckResult, profileGroups } from '../src/types.js'
import { createDialects, type Dialect } from './dialects.js'
import { createMutants } from './mutants.js'
import { HOOK_PREFIX, type Mutant, MutantProxy } from './proxy.js'

export interface MutantVerdict {
  id: string
  killed: boolean
  caughtBy: string[]
  missed: string[]
  note?: string
}

/** Killed when a target check that passed clean fails under the mutant. */
export function judge(
  mutant: Mutant,
  clean: Map<string, CheckResult>,
  results: CheckResult[],
): MutantVerdict {
  const byId = new Map(results.map((r) => [r.id, r]))
  const caughtBy = mutant.targets.filter(
    (t) => clean.get(t)?.outcome === 'pass' && byId.get(t)?.outcome === 'fail',
  )
  const missed = mutant.targets.filter((t) => !caughtBy.includes(t))
  const unusable = mutant.targets.filter((t) => clean.get(t)?.outcome !== 'pass')
  return {
    id: mutant.id,
    killed: caughtBy.length > 0,
    caughtBy,
    missed,
    ...(unusable.length > 0 ? { note: `targets that did not pass clean: ${unusable.join(', ')}` } : {}),
  }
}

/** Checks that no mutant targets: nothing yet shows that a broken deployment would make them fail. */
export function unprovenChecks(mutants: Mutant[]): Check[] {
  const targeted = new Set(mutants.flatMap((m) => m.targets))
  return ALL_CHECKS.filter((c) => !targeted.has(c.id))
}

/** One reference server behind its own proxy, receiver and nats-server: runs one suite at a time. */
interface Lane {
  name: string
  proxy: MutantProxy
  suite(checkIds: string[], mutant?: Mutant, dialect?: Dialect): Promise<CheckResult[]>
  stop(): Promise<void>
}

async function startLane(name: string, seed: number, log: (line: string) => void): Promise<Lane> {
  // Webhook deliveries reach the receiver through the proxy (HOOK_PREFIX): its address is the reference's one
  // private target, so its port is chosen before the reference starts. Ports are the test harness's
  // (test/support/ports.ts: free ones, or AGENTOPS_TEST_PORT_BASE's range).
  const proxyPort = await testPort()
  // destinations.event-bus publishes to a local nats-server (it skips, and its mutants survive, without one).
  const started = await startLocalNats(testPort)
  if (!started.nats) log(`mutants: ${name}: destinations.event-bus will skip: ${started.reason}`)
  const nats = started.nats ?? undefined
  const stops: (() => Promise<void>)[] = []
  const stop = async () => {
    for (const s of stops.splice(0).reverse()) await s()
  }
  if (nats) stops.push(() => nats.stop())
  let reference: Awaited<ReturnType<typeof startReference>>
  const receiver = new WebhookReceiver()
  let proxy: MutantProxy
  try {
    reference = await startReference((line) => log(`${name}: ${line}`), undefined, {
      port: await testPort(),
      receiverTarget: `127.0.0.1:${proxyPort}`,
      ...(nats ? { natsTarget: nats.hostPort } : {}),
    })
    stops.push(() => reference.stop())
    await receiver.listen('127.0.0.1', await listenPort())
    stops.push(() => receiver.close())
    proxy = new MutantProxy(reference.baseUrl, () => `http://127.0.0.1:${receiver.port}`, reference.tokens)
    await proxy.listen(proxyPort)
    stops.push(() => proxy.close())
  } catch (err) {
    // What this lane started before the failure ends with it.
    await stop()
    throw err
  }
  const contract = Contract.fromFile(resolveConfig([]).config.openapiPath)
  const configFor = (): SuiteConfig => {
    const c = resolveConfig(['--seed', String(seed)]).config
    c.baseUrl = proxy.url
    c.streamUrl = proxy.url.replace(/^http/, 'ws')
    c.tokens = { ...reference.tokens }
    c.receiver = { host: '127.0.0.1', port: receiver.port, url: `${proxy.url}${HOOK_PREFIX}/hooks` }
    c.waitMs = 8000
    c.graphqlUrl = `${proxy.url}/v1/graphql`
    c.stream.replayWindow = REFERENCE_REPLAY_WINDOW
    c.webhookMaxAttempts = REFERENCE_WEBHOOK_MAX_ATTEMPTS
    c.runLink = reference.runLink
    if (nats) c.natsUrl = nats.url
    return c
  }
  return {
    name,
    proxy,
    async suite(checkIds, mutant, dialect) {
      const checks = selectChecks(ALL_CHECKS, checkIds)
      // The revocable key is revoked by the run that judges it: each such run gets a fresh one, in the tokens the
      // proxy's mutants see too (the same object).
      if (checks.some((c) => c.needs?.includes('revocable')))
        reference.tokens.revocable = await reference.issueRevocable()
      const config = configFor()
      config.revoke = reference.revoke
      config.issueExpiring = reference.issueExpiring
      dialect?.configure?.(config)
      // A lane runs one suite at a time: what the receiver kept of the runs before is nobody's any more.
      receiver.forgetEarlierRuns()
      proxy.mutant = dialect ?? mutant
      try {
        return (await runChecks({ config, checks, contract, receiver })).results
      } finally {
        proxy.mutant = undefined
      }
    },
    stop,
  }
}

/**
 * How many lanes run side by side (`--lanes`, default 2): each suite run mostly waits on the deployment (retry
 * gaps, rate-limit windows, the stream), so two references on two cores finish the work in about half the time.
 */
function laneCount(flag: string | undefined): number {
  const given = flag ?? process.env.AGENTOPS_MUTANT_LANES ?? '2'
  const n = Number(given)
  if (!Number.isInteger(n) || n < 1 || n > 8)
    throw new Error(`--lanes (or AGENTOPS_MUTANT_LANES) must be an integer from 1 to 8, not ${given}`)
  return n
}

/** Runs every job on the first free lane; a job's result lands at its own index. */
async function onLanes<J, R>(
  lanes: Lane[],
  jobs: J[],
  run: (lane: Lane, job: J) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(jobs.length)
  let next = 0
  await Promise.all(
    lanes.map(async (lane) => {
      while (next < jobs.length) {
        const i = next++
        out[i] = await run(lane, jobs[i] as J)
      }
    }),
  )
  return out
}

/**
 * A dialect's verdict line, and how many of its results count against the suite: a core check that fails, skips or
 * only partly runs (unless the dialect names it), and a profile check that fails with a quoted spec sentence (a
 * legal deployment breaks no sentence of the spec). Profile checks that fill a gap may fail: the dialect made another
 * choice where the spec is silent.
 */
export function dialectLine(
  dialect: Dialect,
  results: CheckResult[],
  verbose = false,
): { line: string; failures: number } {
  const core = results.filter((r) => r.level === 'core' && r.outcome === 'fail')
  const { sentences, silent } = profileGroups(results.filter((r) => r.outcome === 'fail'))
  // A core check that skips (or only partly runs) through a dialect did not prove the dialect conformant either,
  // unless the dialect names it (a surface it does not have). One that does not apply to the dialect's legal
  // choice (a trace served as a stream has no pages) is out of the verdict, as the verdict has it.
  const skipped = results.filter(
    (r) =>
      r.level === 'core' &&
      ((r.outcome === 'skip' && !r.notApplicable) || r.outcome === 'partial') &&
      !(dialect.expectSkips ?? []).includes(r.id),
  )
  const listed = (rs: CheckResult[]) =>
    rs.map((r) => (verbose ? `${r.id}: ${r.message ?? ''}` : r.id)).join(verbose ? '\n  ' : ', ')
  return {
    failures: core.length + skipped.length + sentences.length,
    line: `\ndialect ${dialect.id} (${dialect.description}): core ${core.length === 0 ? 'all pass' : `FAILED ${core.map((r) => `${r.id} (${r.message ?? ''})`).join('; ')}`}${skipped.length > 0 ? `; core SKIPPED or PARTIAL ${skipped.map((r) => `${r.id} ${r.outcome} (${r.message ?? ''})`).join('; ')}` : ''}; ${sentences.length === 0 ? 'no spec sentence broken' : `SPEC SENTENCES FAILED ${sentences.map((r) => `${r.id} (${r.message ?? ''})`).join('; ')}`}; ${silent.length} profile checks where the spec is silent fail as they may${silent.length > 0 ? ` (${listed(silent)})` : ''}`,
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      dialect: { type: 'boolean' },
      lanes: { type: 'string' },
      verbose: { type: 'boolean' },
    },
    strict: true,
  })
  const dialectOnly = values.dialect === true
  const only = values.only?.split(',').map((s) => s.trim()) ?? []
  const log = (line: string) => process.stdout.write(`${line}\n`)
  // The lanes' servers log warnings and errors only, as the test runner's servers do: a line per request is read by
  // nobody here (what a failed start reports is its warnings and errors), and costs both processes CPU on each one.
  process.env.AGENTOPS_LOG_LEVEL ??= 'warn'
  const mutants = createMutants().filter((m) => (only.length === 0 ? !dialectOnly : only.includes(m.id)))
  const base = resolveConfig([]).config
  const dialects = only.length === 0 || dialectOnly ? createDialects(base.openapiPath) : []
  // The clean run and the dialects are whole suite runs, the longest jobs: they go first, so no lane is left with
  // one at the end while the other idles.
  type Job = { clean: true } | { dialect: Dialect } | { mutant: Mutant }
  const jobs: Job[] = [
    { clean: true },
    ...dialects.map((dialect) => ({ dialect })),
    ...mutants.map((mutant) => ({ mutant })),
  ]
  const count = Math.min(laneCount(values.lanes), jobs.length)
  const lanes: Lane[] = []
  try {
    // Every lane that started is stopped in the end, also when another failed to start.
    const started = await Promise.allSettled(
      Array.from({ length: count }, (_, i) => startLane(`lane ${i + 1}`, base.seed, log)),
    )
    for (const s of started) if (s.status === 'fulfilled') lanes.push(s.value)
    for (const s of started) if (s.status === 'rejected') throw s.reason
    log(
      `mutants: ${count} lane(s): ${lanes.map((l) => l.proxy.url).join(', ')}; ${mutants.length} mutants, ${dialects.length} dialects (seed ${base.seed})`,
    )
    let done = 0
    const ran = await onLanes(lanes, jobs, async (lane, job) => {
      const began = Date.now()
      const results =
        'clean' in job
          ? await lane.suite([])
          : 'dialect' in job
            ? await lane.suite([], undefined, job.dialect)
            : await lane.suite(job.mutant.run ?? job.mutant.targets, job.mutant)
      // A check that timed out: what the proxy saw says whether the deployment, the proxy or the suite was slow.
      if (results.some((r) => r.outcome !== 'pass' && /timed out/.test(r.message ?? ''))) {
        const what =
          'clean' in job ? 'the clean run' : 'dialect' in job ? `dialect ${job.dialect.id}` : job.mutant.id
        const slow = lane.proxy.slowReport()
        log(
          `${lane.name}: a check of ${what} timed out; the proxy saw: ${slow.length ? slow.join('; ') : 'nothing slow'}`,
        )
      }
      if (++done % 25 === 0) log(`mutants: ${done} of ${jobs.length} runs done`)
      return { results, ms: Date.now() - began }
    })

    const cleanResults = ran[0]?.results ?? []
    const clean = new Map(cleanResults.map((r) => [r.id, r]))
    const cleanFailures = cleanResults.filter((r) => r.outcome !== 'pass')
    for (const r of cleanFailures) log(`  clean ${r.outcome.toUpperCase()} ${r.id}: ${r.message ?? ''}`)
    log(`clean: ${cleanResults.length - cleanFailures.length}/${cleanResults.length} checks pass`)

    const verdicts: MutantVerdict[] = mutants.map((mutant, i) => {
      const { results, ms } = ran[1 + dialects.length + i] ?? { results: [], ms: 0 }
      const verdict = judge(mutant, clean, results)
      log(
        `${verdict.killed ? 'KILLED  ' : 'SURVIVED'} ${mutant.id.padEnd(32)} ${verdict.killed ? `by ${verdict.caughtBy.join(', ')}` : `none of ${mutant.targets.join(', ')} failed`} (${ms} ms)${verdict.note ? ` — ${verdict.note}` : ''}`,
      )
      return verdict
    })
    const killed = verdicts.filter((v) => v.killed).length
    log(
      `\nmutation score: ${killed}/${verdicts.length} mutants killed (${verdicts.length ? Math.round((killed / verdicts.length) * 100) : 0}%)`,
    )
    const unproven = unprovenChecks(createMutants()).map((c) => c.id)
    if (only.length === 0 && !dialectOnly) {
      log(`checks no mutant targets: ${unproven.length === 0 ? 'none' : unproven.join(', ')}`)
    }
    const survivors = verdicts.filter((v) => !v.killed)
    if (survivors.length > 0) log(`survivors: ${survivors.map((v) => v.id).join(', ')}`)

    // Dialects are correct deployments with other gap decisions: every core check must pass through them, and no
    // profile check may say they break a spec sentence.
    let dialectFailures = 0
    for (const [i, dialect] of dialects.entries()) {
      const { line, failures } = dialectLine(dialect, ran[1 + i]?.results ?? [], values.verbose === true)
      dialectFailures += failures
      log(line)
    }
    return survivors.length > 0 ||
      cleanFailures.length > 0 ||
      dialectFailures > 0 ||
      (only.length === 0 && !dialectOnly && unproven.length > 0)
      ? 1
      : 0
  } finally {
    await Promise.all(lanes.map((lane) => lane.stop()))
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main()
}
