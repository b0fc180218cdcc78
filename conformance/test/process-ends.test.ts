/**
 * The CLI always ends with its verdict: against a broken deployment of each check family (the stand-in of
 * mutants/serve.ts playing one mutant at a time), the process exits within a second of printing its last line,
 * with nothing left open for the exit guard to report. And --plan, told before a run, agrees with that run.
 */
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDir } from './scratch.js'
import { type StandIn, startStandIn } from './stand-in.js'

const ROOT = resolve(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'agentops-conformance.mjs')

/**
 * The program's own exit guard ends it one second after the verdict and names on stderr whatever was still open,
 * so the exact one-second promise is checked by `not.toMatch(/still running/)`: a handle left open makes the guard
 * speak. The elapsed bound only rules out a hang (the reported one lasted minutes); it leaves room for a loaded CI
 * machine to notice the exit, where a 1,000 ms bound failed once at 1,247 ms under a load average of 22.
 */
const EXIT_BOUND_MS = 5_000

let standIn: StandIn
let baseUrl: string
let provision: string

beforeAll(async () => {
  standIn = await startStandIn()
  ;({ baseUrl, provision } = standIn)
}, 120_000)

afterAll(() => standIn?.stop())

/** Runs the CLI; the time its verdict line was printed, the time it exited, and what it said. */
async function timedRun(args: string[]) {
  const child = spawn(process.execPath, [CLI, '--base-url', baseUrl, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '' },
  })
  let out = ''
  let err = ''
  let verdictAt = 0
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString()
    if (/^(CONFORMANT|NOT CONFORMANT|INCOMPLETE|ERROR)\b/m.test(out) && verdictAt === 0)
      verdictAt = Date.now()
  })
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString()
  })
  const code = await new Promise<number | null>((r) => {
    const guard = setTimeout(() => child.kill('SIGKILL'), 240_000)
    child.once('exit', (c) => {
      clearTimeout(guard)
      r(c)
    })
  })
  return { code, out, err, verdictAt, exitedAt: Date.now() }
}

async function play(kind: 'mutant' | 'clean', id = ''): Promise<void> {
  const res = await fetch(`${baseUrl}/__stand-in/${kind === 'clean' ? 'clean' : `mutant/${id}`}`, {
    method: 'POST',
  })
  expect(res.status, await res.text()).toBe(204)
}

/** One broken deployment per family, with the checks it makes fail. */
const BROKEN: Array<[family: string, mutant: string, only: string]> = [
  [
    'ingest and stream (the deployment a user found the CLI hanging on)',
    'ingest-answers-200',
    'ingest,stream,tenancy.connector-id-per-workspace',
  ],
  ['auth', 'missing-token-accepted', 'auth'],
  ['validation', 'bad-input-500', 'validation.malformed-json-400,validation.fuzz-never-5xx'],
  ['idempotency', 'idempotency-ignores-body', 'idempotency'],
  ['ratelimit', 'rate-limit-never', 'ratelimit.429-at-limit'],
  ['webhooks', 'webhook-create-without-id', 'webhooks'],
  ['stream', 'stream-lineage-of-another-batch', 'stream'],
  ['graphql', 'graphql-errors-without-ratelimit', 'graphql.spec-'],
  ['runs', 'pause-ignored', 'runs.pause-suspends'],
  ['tenancy', 'webhook-fanout-across-workspaces', 'tenancy.webhooks-never-cross-workspaces'],
]

describe('the process ends with its verdict', () => {
  it.each(BROKEN)(
    '%s: NOT CONFORMANT, and the process exits within a second of saying so',
    async (_f, mutant, only) => {
      await play('mutant', mutant)
      const r = await timedRun([
        '--provision',
        provision,
        '--only',
        only,
        '--graphql-url',
        `${baseUrl}/v1/graphql`,
      ])
      expect(r.code, `${r.out.slice(-2000)}\n${r.err}`).toBe(1)
      expect(r.out.trim().split('\n').at(-1)).toMatch(/^NOT CONFORMANT: /)
      expect(r.verdictAt).toBeGreaterThan(0)
      expect(r.exitedAt - r.verdictAt).toBeLessThan(EXIT_BOUND_MS)
      // Nothing was left for the exit guard: the checks closed what they opened.
      expect(r.err).not.toMatch(/still running/)
      // Every failure line ends with what addresses it.
      for (const why of r.out.split('\n').filter((l) => /^\s+(why|skipped): /.test(l)))
        expect(why).toMatch(/→ fix: \S/)
    },
    240_000,
  )

  it('a --deadline that passes mid-run still ends with the verdict, naming it', async () => {
    await play('clean')
    // A run that cannot end before the deadline whatever the machine's speed: runs.pause-suspends waits on the slow
    // tool's delay (here 6 s) at least three times, so it lasts over 18 s; the deadline (12 s, counted from the
    // process's start) leaves the start-up and provisioning seconds of room.
    const config = join(scratchDir('deadline-'), 'conformance.json')
    writeFileSync(
      config,
      JSON.stringify({
        profile: { tools: { slow: { provider: 'builtin:delay', config: { delay_ms: 6000 } } } },
      }),
    )
    const r = await timedRun([
      '--provision',
      provision,
      '--config',
      config,
      '--only',
      'runs.pause-suspends',
      '--deadline',
      '12',
    ])
    expect(r.code, r.out.slice(-2000)).toBe(3)
    expect(r.out).toMatch(
      /(not run|cut short): the --deadline \/ AGENTOPS_CONFORMANCE_DEADLINE of 12 s passed/,
    )
    expect(r.out.trim().split('\n').at(-1)).toMatch(/^INCOMPLETE: .*--deadline/)
    expect(r.err).not.toMatch(/still running/)
    expect(r.exitedAt - r.verdictAt).toBeLessThan(EXIT_BOUND_MS)
  }, 240_000)

  it('--bail stops at the first core failure: what had not begun is skipped naming it, and the verdict is NOT CONFORMANT', async () => {
    await play('mutant', 'missing-token-accepted')
    const json = join(scratchDir('bail-'), 'run.json')
    const r = await timedRun(['--provision', provision, '--only', 'auth,runs', '--bail', '--json', json])
    expect(r.code, r.out.slice(-2000)).toBe(1)
    const results = (
      JSON.parse(readFileSync(json, 'utf8')) as {
        results: Array<{ id: string; level: string; outcome: string; message?: string }>
      }
    ).results
    const failed = results.filter((x) => x.level === 'core' && x.outcome === 'fail').map((x) => x.id)
    expect(failed).toEqual(['auth.missing-token-401'])
    const after = results.slice(results.findIndex((x) => x.id === failed[0]) + 1)
    const bailed = after.filter((x) =>
      /^(not run|cut short): --bail: core check auth\.missing-token-401 failed/.test(x.message ?? ''),
    )
    // A check already under way when it failed (one that overlaps) may still finish; nothing else runs.
    expect(bailed.length).toBeGreaterThan(5)
    expect(after.filter((x) => x.outcome !== 'pass' && !bailed.includes(x))).toEqual([])
    expect(r.out.trim().split('\n').at(-1)).toMatch(
      /^NOT CONFORMANT: 1 of \d+ core checks failed: auth\.missing-token-401/,
    )
    expect(r.err).not.toMatch(/still running/)
  }, 240_000)

  it('--bail stops at a core check that could not run too (a passing verdict is then out of reach), unless --allow-incomplete accepts that', async () => {
    await play('clean')
    const primary = await provisioned()
    // Each needs a second workspace's token, which is not given: each is skipped.
    const only = 'tenancy.webhooks-never-cross-workspaces,tenancy.cursor-stays-in-workspace'
    const outcomes = async (extra: string[]) => {
      const json = join(scratchDir('bail-skip-'), 'run.json')
      const r = await timedRun(['--token', primary, '--only', only, '--bail', '--json', json, ...extra])
      const { results } = JSON.parse(readFileSync(json, 'utf8')) as {
        results: Array<{ id: string; outcome: string; message?: string }>
      }
      return { code: r.code, messages: results.map((x) => `${x.id}: ${x.outcome} ${x.message ?? ''}`) }
    }
    const bailed = await outcomes([])
    expect(bailed.code).toBe(3)
    expect(bailed.messages[0]).toMatch(
      /^tenancy\.webhooks-never-cross-workspaces: skip no second-workspace token/,
    )
    expect(bailed.messages[1]).toBe(
      'tenancy.cursor-stays-in-workspace: skip not run: --bail: core check tenancy.webhooks-never-cross-workspaces could not run',
    )
    const accepted = await outcomes(['--allow-incomplete'])
    expect(accepted.code).toBe(0)
    expect(accepted.messages[1]).toMatch(
      /^tenancy\.cursor-stays-in-workspace: skip no second-workspace token/,
    )
  }, 240_000)

  it('--bail runs the core checks first; with --strict-profile a profile failure skips the profile checks after it', async () => {
    await play('mutant', 'webhook-3xx-counted-delivered')
    const json = join(scratchDir('bail-profile-'), 'run.json')
    // In the suite's order: the two profile checks come before webhooks.signature-form, a core check.
    const only =
      'webhooks.subscribe,webhooks.receiver-answer-judged,webhooks.secret-rotation,webhooks.signature-form'
    const r = await timedRun([
      '--provision',
      provision,
      '--only',
      only,
      '--bail',
      '--strict-profile',
      '--json',
      json,
    ])
    const results = (
      JSON.parse(readFileSync(json, 'utf8')) as {
        results: Array<{ id: string; level: string; outcome: string; message?: string }>
      }
    ).results
    expect(
      results.map((x) => [x.id, x.level, x.outcome]),
      r.out.slice(-2000),
    ).toEqual([
      ['webhooks.subscribe', 'core', 'pass'],
      ['webhooks.signature-form', 'core', 'pass'],
      ['webhooks.receiver-answer-judged', 'profile', 'fail'],
      ['webhooks.secret-rotation', 'profile', 'skip'],
    ])
    expect(results[3]?.message).toBe(
      'not run: --bail --strict-profile: profile check webhooks.receiver-answer-judged failed',
    )
    expect(r.code).toBe(1)
    expect(r.err).not.toMatch(/still running/)
  }, 240_000)

  it('--plan says beforehand which checks will run and which skip for want of a token, as the run then does', async () => {
    await play('clean')
    const primary = await provisioned()
    const only = 'auth,authz,ratelimit,scoping,surface.error-paths'
    const plan = await timedRun(['--token', primary, '--only', only, '--plan'])
    expect(plan.code).toBe(3)
    const planned = new Map(
      [...plan.out.matchAll(/^(RUN |SKIP|N\/A ) +\w+ +(\S+)/gm)].map((m) => [m[2], m[1]!.trim()]),
    )
    expect(plan.out).toMatch(/SKIP core +scoping\.agent-404 +→ needs second-workspace token \(--second-token/)
    const json = join(scratchDir('plan-'), 'run.json')
    const run = await timedRun(['--token', primary, '--only', only, '--json', json])
    const results = (
      JSON.parse(readFileSync(json, 'utf8')) as {
        results: Array<{ id: string; outcome: string; notApplicable?: boolean }>
      }
    ).results
    expect(results.length).toBe(planned.size)
    for (const r of results)
      expect([r.id, planned.get(r.id)]).toEqual([
        r.id,
        r.notApplicable ? 'N/A' : r.outcome === 'skip' ? 'SKIP' : 'RUN',
      ])
    expect(run.code).toBe(3)
  }, 240_000)
})

async function provisioned(): Promise<string> {
  const { execSync } = await import('node:child_process')
  return (JSON.parse(execSync(provision, { cwd: ROOT, encoding: 'utf8' })) as { tokens: { primary: string } })
    .tokens.primary
}
