/**
 * The mutation run's switch runner keeps one reference server per worker, so what a mutant leaves behind outlives
 * it: in the whole-scope run of 2026-11-30 a mutated `builtin:delay` tool whose promise never resolved held the run
 * scheduler's places, and every later run on that server waited for runs that never moved, 164 mutants of other
 * modules "killed" so. A kill that may be the server's (a core check that could not run, or a killing check that
 * waited) is looked at again: the same checks with no mutant active on the same server. When they fail there too,
 * the server is replaced and the mutant judged again on a fresh one.
 *
 * The suite here is the real one for clean runs, and a stand-in for what a broken server makes of any run (the
 * killing check could not run after a long wait): which server is broken is decided by its process id.
 */
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { main } from '../src/cli.js'
import { TOKENS } from '../src/config.js'
import { freePort } from '../src/ports.js'
import { provisionedTokens } from '../src/provision.js'
import { provisionArgs } from '../src/reference.js'
// @ts-expect-error: plain ESM modules of the command, without types
import { quiet } from '../stryker/changes.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { ConformanceSwitchRunner, confirmIds } from '../stryker/switch-runner.mjs'

const repo = join(import.meta.dirname, '..', '..')
const CHECK = 'idempotency.replay-same-response'
const ONLY = ['idempotency', 'sweep']

/** A kill report as a broken server gives one: the check could not run, having waited 3 s for what never came. */
function couldNotRun(json: string): number {
  const result = {
    id: CHECK,
    level: 'core',
    family: 'idempotency',
    outcome: 'skip',
    message: 'could not bring a run to awaiting_approval: gave up after 3000 ms',
    durationMs: 3000,
  }
  const left = {
    ...result,
    id: 'idempotency.run-start-replay',
    message: 'not run: --bail: core check',
    durationMs: 0,
  }
  writeFileSync(
    json,
    JSON.stringify({
      verdict: { verdict: 'INCOMPLETE', core: { skipped: [CHECK, left.id], partial: [], failed: [] } },
      results: [result, left],
    }),
  )
  return 3
}

describe('conformance:stryker switch runner, a server an earlier mutant broke', () => {
  let runner: InstanceType<typeof ConformanceSwitchRunner> | undefined
  // The runner keeps its servers' stores and the suite's config under its root: a folder of links to the kit.
  const root = mkdtempSync(join(repo, '.switch-test-'))
  for (const entry of ['bin', 'dist', 'src', 'conformance', 'node_modules', 'openapi', 'package.json'])
    symlinkSync(join(repo, entry), join(root, entry))
  afterAll(async () => {
    await runner?.dispose()
    rmSync(root, { recursive: true, force: true })
  })

  it('confirms a waiting kill on the clean server, and judges again on a fresh one when the clean server fails', async () => {
    const broken = new Set<number>()
    const suite = async (...args: Parameters<typeof main>) => {
      const argv = args[0]
      const json = argv[argv.indexOf('--json') + 1] ?? ''
      const name = basename(json, '.json')
      const pid = runner?.serverPid
      if (pid !== undefined && broken.has(pid)) return couldNotRun(json)
      const code = await main(...args)
      // A mutant the suite does not notice, which leaves its server broken for every run after it.
      if (name === 'breaks-quietly' && pid !== undefined) broken.add(pid)
      return code
    }
    runner = new ConformanceSwitchRunner(
      quiet,
      { timeoutMS: 5000, timeoutFactor: 1.5 },
      { root, suite, identities: { provisionArgs, provisionedTokens, TOKENS }, freePort, dryRunOnly: ONLY },
    )
    await runner.init()
    const dry = await runner.dryRun({ timeout: 240_000, disableBail: false, coverageAnalysis: 'perTest' })
    expect(dry.tests[0].status, dry.tests[0].failureMessage).toBe(0)
    const run = (id: string) =>
      runner!.mutantRun({
        activeMutant: { id },
        mutantActivation: 'runtime',
        reloadEnvironment: false,
        sandboxFileName: join(root, 'src', 'domain', 'idempotency', 'key.ts'),
        timeout: 240_000,
        disableBail: false,
      })

    // Not noticed, and the server it ran on is broken.
    const first = runner.serverPid
    expect((await run('breaks-quietly')).status).toBe('survived')
    expect(runner.serverPid).toBe(first)

    // The next mutant, one the clean reference passes, meets the broken server: its kill waited, the clean server
    // fails the same check, so it is judged again on a fresh server, and survives as it does there.
    const next = await run('no-such-mutant')
    expect(next.status, JSON.stringify(next)).toBe('survived')
    const fresh = runner.serverPid
    expect(fresh).not.toBe(first)
    expect(() => process.kill(first!, 0)).toThrow()

    // A kill that waited on a server that is not broken: the clean server passes the check, the kill stands, and
    // the server is kept.
    broken.add(fresh!)
    const onBroken = await run('no-such-mutant')
    expect(onBroken.status).toBe('survived')
    const healthy = runner.serverPid
    expect(healthy).not.toBe(fresh)
    const stands = async (...args: Parameters<typeof main>) => {
      const json = args[0][args[0].indexOf('--json') + 1] ?? ''
      return basename(json, '.json') === 'kills-slowly' ? couldNotRun(json) : main(...args)
    }
    const seen: string[] = []
    runner.suite = (...args: Parameters<typeof main>) => {
      seen.push(basename(args[0][args[0].indexOf('--json') + 1] ?? '', '.json'))
      return stands(...args)
    }
    const killed = await run('kills-slowly')
    expect(killed.status, JSON.stringify(killed)).toBe('killed')
    expect(runner.serverPid).toBe(healthy)
    expect(seen).toEqual(['kills-slowly', 'kills-slowly-clean'])

    // A static mutant's kill stands as it is: its server was started for it, and no run on it is clean.
    seen.length = 0
    const loaded = await runner.mutantRun({
      activeMutant: { id: 'kills-slowly' },
      mutantActivation: 'static',
      reloadEnvironment: true,
      sandboxFileName: join(root, 'src', 'domain', 'idempotency', 'key.ts'),
      timeout: 240_000,
      disableBail: false,
    })
    expect(loaded.status).toBe('killed')
    expect(seen).toEqual(['kills-slowly'])

    // A run the runner's deadline cuts short says where the suite was then: the check it had come to.
    runner.suite = async (...args: Parameters<typeof main>) => {
      args[2]?.out('[1/2] PASS core idempotency.first-check')
      await new Promise((resolve) => args[3]?.addEventListener('abort', resolve))
      return 3
    }
    const cut = await run('never-ends')
    expect(cut.status).toBe('timeout')
    expect(cut.reason).toMatch(/running the suite, after: \[1\/2\] PASS core idempotency\.first-check$/)
  }, 300_000)

  it('names the checks to look at again: the failed ones and the core ones that could not run, never the sweep', () => {
    const report = {
      results: [
        { id: 'runs.a', level: 'core', outcome: 'fail' },
        {
          id: 'runs.b',
          level: 'core',
          outcome: 'skip',
          message: 'could not bring a run to awaiting_approval',
        },
        {
          id: 'runs.c',
          level: 'core',
          outcome: 'skip',
          message: 'not run: --bail: core check runs.b could not run',
        },
        { id: 'runs.d', level: 'profile', outcome: 'skip', message: 'needs a token' },
        { id: 'runs.e', level: 'core', outcome: 'partial' },
        { id: 'sweep.no-5xx', level: 'core', outcome: 'fail' },
        { id: 'runs.f', level: 'profile', outcome: 'fail' },
      ],
    }
    expect(confirmIds(report)).toEqual(['runs.a', 'runs.b', 'runs.e', 'runs.f'])
  })
})
