/**
 * Mutation testing of the suite: starts the reference server once, runs the clean suite through a pass-through
 * proxy (every check must pass), then each mutant (each must make at least one of its target checks fail, and
 * every target that fails must have passed clean). Prints the mutation score; exits 1 if a mutant survives or
 * the clean run fails.
 *
 *   npx tsx conformance/mutants/run.ts [--only mutant-id,...] [--dialect]
 *
 * `--dialect` runs the foreign dialect after the clean run and the `--only` mutants (none without `--only`).
 */
import { parseArgs } from 'node:util'
import { listenPort, testPort } from '../../test/support/ports.js'
import type { Check } from '../src/check.js'
import { ALL_CHECKS } from '../src/checks/index.js'
import { resolveConfig, type SuiteConfig } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { startLocalNats } from '../src/nats.js'
import { WebhookReceiver } from '../src/receiver.js'
import { REFERENCE_REPLAY_WINDOW, startReference } from '../src/reference.js'
import { runChecks, selectChecks } from '../src/runner.js'
import type { CheckResult } from '../src/types.js'
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

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { only: { type: 'string' }, dialect: { type: 'boolean' } },
    strict: true,
  })
  const dialectOnly = values.dialect === true
  const only = values.only?.split(',').map((s) => s.trim()) ?? []
  const log = (line: string) => process.stdout.write(`${line}\n`)
  // Webhook deliveries reach the receiver through the proxy (HOOK_PREFIX): its address is the reference's one
  // private target, so its port is chosen before the reference starts. Ports are the test harness's
  // (test/support/ports.ts: free ones, or AGENTOPS_TEST_PORT_BASE's range).
  const proxyPort = await testPort()
  // destinations.event-bus publishes to a local nats-server (it skips, and its mutants survive, without one).
  const started = await startLocalNats(testPort)
  if (!started.nats) log(`mutants: destinations.event-bus will skip: ${started.reason}`)
  const nats = started.nats ?? undefined
  const reference = await startReference(log, undefined, {
    port: await testPort(),
    receiverTarget: `127.0.0.1:${proxyPort}`,
    ...(nats ? { natsTarget: nats.hostPort } : {}),
  })
  const receiver = new WebhookReceiver()
  await receiver.listen('127.0.0.1', await listenPort())
  const proxy = new MutantProxy(
    reference.baseUrl,
    () => `http://127.0.0.1:${receiver.port}`,
    reference.tokens,
  )
  await proxy.listen(proxyPort)
  const base = resolveConfig([]).config
  const contract = Contract.fromFile(base.openapiPath)

  const configFor = (): SuiteConfig => {
    const c = resolveConfig(['--seed', String(base.seed)]).config
    c.baseUrl = proxy.url
    c.streamUrl = proxy.url.replace(/^http/, 'ws')
    c.tokens = { ...reference.tokens }
    c.receiver = { host: '127.0.0.1', port: receiver.port, url: `${proxy.url}${HOOK_PREFIX}/hooks` }
    c.waitMs = 8000
    c.graphqlUrl = `${proxy.url}/v1/graphql`
    c.stream.replayWindow = REFERENCE_REPLAY_WINDOW
    if (nats) c.natsUrl = nats.url
    return c
  }
  const suite = async (checkIds: string[], dialect?: Dialect) => {
    const config = configFor()
    dialect?.configure?.(config)
    const checks = selectChecks(ALL_CHECKS, checkIds)
    return (await runChecks({ config, checks, contract, receiver })).results
  }

  try {
    log(`mutants: proxy ${proxy.url} → ${reference.baseUrl}; clean run first (seed ${base.seed})`)
    proxy.mutant = undefined
    const cleanResults = await suite([])
    const clean = new Map(cleanResults.map((r) => [r.id, r]))
    const cleanFailures = cleanResults.filter((r) => r.outcome !== 'pass')
    for (const r of cleanFailures) log(`  clean ${r.outcome.toUpperCase()} ${r.id}: ${r.message ?? ''}`)
    log(`clean: ${cleanResults.length - cleanFailures.length}/${cleanResults.length} checks pass`)

    const mutants = createMutants().filter((m) => (only.length === 0 ? !dialectOnly : only.includes(m.id)))
    const verdicts: MutantVerdict[] = []
    for (const mutant of mutants) {
      proxy.mutant = mutant
      const started = Date.now()
      const results = await suite(mutant.run ?? mutant.targets)
      const verdict = judge(mutant, clean, results)
      verdicts.push(verdict)
      log(
        `${verdict.killed ? 'KILLED  ' : 'SURVIVED'} ${mutant.id.padEnd(32)} ${verdict.killed ? `by ${verdict.caughtBy.join(', ')}` : `none of ${mutant.targets.join(', ')} failed`} (${Date.now() - started} ms)${verdict.note ? ` — ${verdict.note}` : ''}`,
      )
    }
    proxy.mutant = undefined
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

    // Dialects are correct deployments with other gap decisions: every core check must pass through them.
    let dialectFailures = 0
    if (only.length === 0 || dialectOnly) {
      for (const dialect of createDialects(base.openapiPath)) {
        proxy.mutant = dialect
        const results = await suite([], dialect)
        proxy.mutant = undefined
        const core = results.filter((r) => r.level === 'core' && r.outcome === 'fail')
        const profile = results.filter((r) => r.level === 'profile' && r.outcome === 'fail')
        // A core check that skips (or only partly runs) through a dialect did not prove the dialect conformant
        // either, unless the dialect names it (a surface it does not have).
        const skipped = results.filter(
          (r) =>
            r.level === 'core' &&
            (r.outcome === 'skip' || r.outcome === 'partial') &&
            !(dialect.expectSkips ?? []).includes(r.id),
        )
        dialectFailures += core.length + skipped.length
        log(
          `\ndialect ${dialect.id} (${dialect.description}): core ${core.length === 0 ? 'all pass' : `FAILED ${core.map((r) => `${r.id} (${r.message ?? ''})`).join('; ')}`}${skipped.length > 0 ? `; core SKIPPED or PARTIAL ${skipped.map((r) => `${r.id} ${r.outcome} (${r.message ?? ''})`).join('; ')}` : ''}; ${profile.length} profile checks fail as they may${profile.length > 0 ? ` (${profile.map((r) => r.id).join(', ')})` : ''}`,
        )
      }
    }
    return survivors.length > 0 ||
      cleanFailures.length > 0 ||
      dialectFailures > 0 ||
      (only.length === 0 && !dialectOnly && unproven.length > 0)
      ? 1
      : 0
  } finally {
    await proxy.close()
    await receiver.close()
    await reference.stop()
    await nats?.stop()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main()
}
