/**
 * The mutation run's test runner (conformance/stryker/switch-runner.mjs) judges a mutant as a fresh process does:
 * a copy of the kit whose build has one module instrumented by StrykerJS's own instrumenter (as a Stryker sandbox
 * has), its dry run's coverage telling static mutants from runtime ones, a runtime mutant switched inside the one
 * long-lived server, a static mutant given a server of its own, and a run after a killed mutant unaffected by what
 * that mutant left in the store. Each outcome is compared with the suite's own fresh-process run (`--reference`
 * with the mutant active from the start, what Stryker's command runner did per mutant).
 */
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { main } from '../src/cli.js'
import { TOKENS } from '../src/config.js'
import { freePort } from '../src/ports.js'
import { provisionedTokens } from '../src/provision.js'
import { provisionArgs } from '../src/reference.js'
// @ts-expect-error: plain ESM modules of the command, without types
import { quiet } from '../stryker/changes.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { noticed } from '../stryker/noticed.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { checksFor, sectionOf } from '../stryker/scope.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { ConformanceSwitchRunner, SUITE_TEST } from '../stryker/switch-runner.mjs'
import { type Mutant, mutantRunOptions, sandbox } from './stryker-sandbox.js'

const run = promisify(execFile)
const root = join(import.meta.dirname, '..', '..')
const MODULE = 'src/domain/idempotency/key'
const ONLY = ['idempotency', 'sweep']
/** A mutant id no code has: the test's suite stops the server under it, as a mutant stuck in a loop leaves it. */
const HANG = 'hangs-the-server'
/** The module of a transport made on its first send and kept (`cloudEventsTransport`, behind `onFirstSend`). */
const MADE_ONCE = 'src/outbound/destinations/cloudevents'

/** The mutant that empties the body of `cloudEventsTransport`, among a sandbox's mutants. */
function emptiedMaker(mutants: readonly Mutant[]): Mutant {
  // The instrumenter counts lines from 0.
  const maker = readFileSync(join(root, 'dist', `${MADE_ONCE}.js`), 'utf8')
    .split('\n')
    .findIndex((l) => l.startsWith('export function cloudEventsTransport('))
  const found = mutants.find(
    (m) =>
      m.fileName.endsWith(`${MADE_ONCE}.js`) &&
      m.mutatorName === 'BlockStatement' &&
      m.location.start.line === maker &&
      !m.status,
  )
  expect(found, 'the emptied body of cloudEventsTransport').toBeTruthy()
  return found!
}

/** The fresh-process judgement: the suite with `--reference` (keys, server, store new), the mutant active from start. */
async function freshProcess(dir: string, mutant: string): Promise<boolean> {
  const json = join(dir, `fresh-${mutant}.json`)
  const args = ['conformance/bin/agentops-conformance.mjs', '--reference', '--strict-profile', '--bail']
  await run(process.execPath, [...args, '--only', ONLY.join(','), '--json', json], {
    cwd: dir,
    env: { ...process.env, __STRYKER_ACTIVE_MUTANT__: mutant },
    timeout: 240_000,
  }).catch(() => undefined)
  return noticed(JSON.parse(readFileSync(json, 'utf8')))
}

describe('conformance:stryker switch runner', () => {
  let runner: InstanceType<typeof ConformanceSwitchRunner> | undefined
  afterAll(async () => {
    await runner?.dispose()
  })

  it('judges runtime mutants in one server, static ones in their own, as fresh processes do', async () => {
    const { dir, mutants } = await sandbox(MODULE)
    const line = (l: number) => mutants.filter((m) => m.location.start.line === l && !m.status)
    // `REPLAYED_HEADERS = ['content-type', 'location']` (module level: only its load executes it) emptied.
    const staticMutant = line(7).find((m) => m.mutatorName === 'ArrayDeclaration')!
    // validateKey's body emptied: executed per request.
    const runtimeMutant = line(8).find((m) => m.mutatorName === 'BlockStatement')!
    expect(staticMutant && runtimeMutant).toBeTruthy()

    // The suite from its sources; under HANG it first stops the server (SIGSTOP: it neither answers nor exits).
    const suite = (...args: Parameters<typeof main>) => {
      const json = args[0][args[0].indexOf('--json') + 1] ?? ''
      if (json.endsWith(`${HANG}.json`) && runner?.serverPid) process.kill(runner.serverPid, 'SIGSTOP')
      return main(...args)
    }
    runner = new ConformanceSwitchRunner(
      quiet,
      { timeoutMS: 2000, timeoutFactor: 1.5 },
      {
        root: dir,
        suite,
        identities: { provisionArgs, provisionedTokens, TOKENS },
        freePort,
        dryRunOnly: ONLY,
      },
    )
    await runner.init()
    const dry = await runner.dryRun({ timeout: 240_000, disableBail: false, coverageAnalysis: 'perTest' })
    expect(dry.status, JSON.stringify(dry)).toBe('complete')
    expect(dry.tests[0].status, dry.tests[0].failureMessage).toBe(0)
    expect(Object.keys(dry.mutantCoverage.static)).toContain(staticMutant.id)
    expect(Object.keys(dry.mutantCoverage.static)).not.toContain(runtimeMutant.id)
    expect(Object.keys(dry.mutantCoverage.perTest[SUITE_TEST])).toContain(runtimeMutant.id)
    // What the dry run's checks ran, for every worker to read (a runtime survivor among them whose code never ran
    // while it was active is judged again the static way: the next test).
    expect(runner.ranByChecks(runtimeMutant.id)).toBe(true)
    expect(runner.ranByChecks(staticMutant.id)).toBe(false)
    expect(runner.ranByChecks('no-such-mutant')).toBe(false)
    const server = runner.serverPid

    const options = (m: Mutant | { id: string }, activation: 'runtime' | 'static') =>
      mutantRunOptions(join(dir, `${MODULE}.ts`), m, activation)
    // Switched inside the dry run's server.
    const switched = await runner.mutantRun(options(runtimeMutant, 'runtime'))
    expect(runner.serverPid).toBe(server)
    expect(switched.status, JSON.stringify(switched)).toBe('killed')

    // Right after it, in the same server, with what it left behind: a run with no mutant active passes, as the
    // clean reference does (a survivor stays a survivor).
    const after = await runner.mutantRun(options({ id: 'no-such-mutant' }, 'runtime'))
    expect(runner.serverPid).toBe(server)
    expect(after.status, JSON.stringify(after)).toBe('survived')

    // A static mutant: a server of its own, loaded with the mutant active.
    const loaded = await runner.mutantRun(options(staticMutant, 'static'))
    const staticServer = runner.serverPid
    expect(staticServer).not.toBe(server)
    expect(loaded.status, JSON.stringify(loaded)).toBe('killed')
    // Switching at runtime cannot activate it: in a server loaded without it, it is not noticed.
    const notLoaded = await runner.mutantRun({ ...options(staticMutant, 'runtime'), reloadEnvironment: true })
    expect(runner.serverPid).not.toBe(staticServer)
    expect(notLoaded.status, JSON.stringify(notLoaded)).toBe('survived')

    // A mutant that hangs the server: Timeout at the runner's own deadline (1.5 x the dry run's time + 2 s), far
    // before the caller's timeout, or Killed when the suite's requests gave up on the server first (its verdict
    // stands, and the server that then does not answer `end` is not waited on); either way the hung server is
    // killed, and the next run, in a fresh server, judged as before.
    const hungServer = runner.serverPid
    const hangStarted = Date.now()
    const hung = await runner.mutantRun({ ...options({ id: HANG }, 'runtime'), timeout: 600_000 })
    const hangMs = Date.now() - hangStarted
    expect(['timeout', 'killed'], JSON.stringify(hung)).toContain(hung.status)
    expect(hangMs).toBeLessThan(1.5 * dry.tests[0].timeSpentMs + 2000 + 30_000)
    expect(() => process.kill(hungServer!, 0)).toThrow()
    const recovered = await runner.mutantRun(options(runtimeMutant, 'runtime'))
    expect(runner.serverPid).not.toBe(hungServer)
    expect(recovered.status, JSON.stringify(recovered)).toBe('killed')
    const clean = await runner.mutantRun(options({ id: 'no-such-mutant' }, 'runtime'))
    expect(clean.status, JSON.stringify(clean)).toBe('survived')

    // The worker's receiver port taken by another process: that run is the harness's fault, never a kill. The
    // runner takes another port, outside the range outbound connections are given theirs, and a server allowing it,
    // and runs the mutant again.
    const taken = runner.receiverPort
    const squatter = createServer()
    await new Promise<void>((resolve) => squatter.listen(taken, '127.0.0.1', resolve))
    try {
      const despite = await runner.mutantRun(options({ id: 'no-such-mutant' }, 'runtime'))
      expect(despite.status, JSON.stringify(despite)).toBe('survived')
      expect(runner.receiverPort).not.toBe(taken)
      const ephemeralLow = Number(
        readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
      )
      expect(runner.receiverPort).toBeLessThan(ephemeralLow)
    } finally {
      await new Promise((resolve) => squatter.close(resolve))
    }

    // The same judgements from fresh processes.
    expect(await freshProcess(dir, runtimeMutant.id)).toBe(true)
    expect(await freshProcess(dir, staticMutant.id)).toBe(true)
  }, 600_000)

  it('judges a mutant of code the server runs once and keeps on a server started with it', async () => {
    // A transport made on its first send (onFirstSend) and kept: its making runs during the dry run's checks, and in
    // no later run of the same server. The mutant empties the body of the function that makes it.
    const module = MADE_ONCE
    // The dry run runs what a mutant run of the module runs (its section's checks): every transport they use is
    // made in the dry run, so no later run of the server makes one.
    const only: string[] = checksFor(sectionOf(`${module}.ts`))
    const { dir, mutants } = await sandbox(module)
    const madeOnce = emptiedMaker(mutants)
    // A mutant run goes through the whole of its section's checks, not the one check of this dry run: time for them.
    const judge = new ConformanceSwitchRunner(
      quiet,
      { timeoutMS: 120_000, timeoutFactor: 1.5 },
      {
        root: dir,
        suite: main,
        identities: { provisionArgs, provisionedTokens, TOKENS },
        freePort,
        dryRunOnly: only,
      },
    )
    try {
      await judge.init()
      const dry = await judge.dryRun({ timeout: 240_000, disableBail: false, coverageAnalysis: 'perTest' })
      expect(dry.tests[0].status, dry.tests[0].failureMessage).toBe(0)
      expect(judge.ranByChecks(madeOnce.id)).toBe(true)
      const server = judge.serverPid
      // Switched in at runtime it never runs (the transport is made), and the suite passes; started with it, no
      // transport is ever made and the check fails.
      const verdict = await judge.mutantRun(mutantRunOptions(join(dir, `${module}.ts`), madeOnce))
      expect(verdict.status, JSON.stringify(verdict)).toBe('killed')
      expect(judge.serverPid).not.toBe(server)
    } finally {
      await judge.dispose()
    }
  }, 600_000)
  it('covers code a server makes once by the section whose checks make it, whichever section ran first', async () => {
    // A whole run's dry run: the §6 events section's checks send to a CloudEvents sink before the destinations
    // section's do. On one server shared by both, the events section made the transport, so the destinations
    // section's checks never covered its making and the emptied maker was left unrun (NoCoverage), though a section
    // run of the destinations kills it (the test above). Each section's checks get a server of their own.
    const events = 'src/domain/events/log'
    const { dir, mutants } = await sandbox(events, MADE_ONCE)
    const madeOnce = emptiedMaker(mutants)
    const own: string = sectionOf(`${MADE_ONCE}.ts`)
    const sink = ['destinations.cloudevents-structured']
    const judge = new ConformanceSwitchRunner(
      quiet,
      { timeoutMS: 120_000, timeoutFactor: 1.5 },
      {
        root: dir,
        suite: main,
        identities: { provisionArgs, provisionedTokens, TOKENS },
        freePort,
        dryRunOnly: { [sectionOf(`${events}.ts`)]: sink, [own]: sink },
      },
    )
    try {
      await judge.init()
      const dry = await judge.dryRun({ timeout: 240_000, disableBail: false, coverageAnalysis: 'perTest' })
      expect(dry.tests.map((t: { status: number }) => t.status)).toEqual([0, 0])
      expect(Object.keys(dry.mutantCoverage.perTest[own])).toContain(madeOnce.id)
      expect(judge.ranByChecks(madeOnce.id)).toBe(true)
    } finally {
      await judge.dispose()
    }
  }, 600_000)
})
