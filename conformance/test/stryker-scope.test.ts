/**
 * The mutation run's selection: every spec section of the scope names the checks that judge its mutants, each of
 * those prefixes selects at least one check (a typo would judge a section by nothing), and the quick run's
 * `--since` finds exactly the changed lines of the scope's modules.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Instrumenter } from '@stryker-mutator/instrumenter'
import { describe, expect, it } from 'vitest'
import { ALL_CHECKS } from '../src/checks/index.js'
import { selectChecks } from '../src/runner.js'
import { giveBackWithheldTime, waitUntil } from '../src/wait.js'
// @ts-expect-error: plain ESM modules of the command, without types
import { changedRanges, countMutants, quiet } from '../stryker/changes.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { failureLogIgnorer, notFoundWordsIgnorer, telemetryIgnorer } from '../stryker/ignorers.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { CHECKS, checksFor, SCOPE, sectionOf, WAIT_MS } from '../stryker/scope.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { mutantsBySection, ownSectionCoverage } from '../stryker/switch-runner.mjs'
import { scratchDir } from './scratch.js'

/** The whole scope instrumented once, with the run's ignorers (the annotation tests share it). */
interface InstrumentedScope {
  files: string[]
  mutants: readonly InstrumentedMutant[]
  source: (file: string) => string
}
type InstrumentedMutant = Awaited<ReturnType<Instrumenter['instrument']>>['mutants'][number]
let instrumented: Promise<InstrumentedScope> | undefined
function instrumentedScope(): Promise<InstrumentedScope> {
  instrumented ??= (async () => {
    const root = join(import.meta.dirname, '..', '..')
    const files = execFileSync('git', ['ls-files', 'src'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.endsWith('.ts') && sectionOf(f) !== undefined)
    const sources = new Map(files.map((f) => [f, readFileSync(join(root, f), 'utf8')]))
    const { mutants } = await new Instrumenter(quiet).instrument(
      files.map((f) => ({ name: f, content: sources.get(f) ?? '', mutate: true })),
      {
        plugins: null,
        excludedMutations: [],
        ignorers: [failureLogIgnorer, telemetryIgnorer, notFoundWordsIgnorer],
        noHeader: true,
      },
    )
    return { files, mutants, source: (file: string) => sources.get(file) ?? '' }
  })()
  return instrumented
}

describe('conformance:stryker selection', () => {
  it('every section names check prefixes, and each selects at least one check', () => {
    expect(Object.keys(CHECKS).sort()).toEqual(Object.keys(SCOPE).sort())
    for (const section of Object.keys(SCOPE)) {
      for (const prefix of checksFor(section) as string[])
        expect(selectChecks(ALL_CHECKS, [prefix]).length, `${section}: ${prefix}`).toBeGreaterThan(0)
    }
    expect(sectionOf('src/domain/idempotency/key.ts')).toBe('§8 idempotency')
    expect(sectionOf('src/domain/idempotency/ports.ts')).toBeUndefined()
    expect(sectionOf('src/http/app.ts')).toBeUndefined()
    expect(sectionOf('src/outbound/http.ts')).toBe('§5.5, §6 webhook outbox, signing, retries')
    expect(sectionOf('src/outbound/addresses.ts')).toBeUndefined()
    expect(sectionOf('src/domain/outbox/dispatcher.ts')).toBe('§5.5, §6 webhook outbox, signing, retries')
    // A single star stays in its folder: the destinations' transports, one folder down, are their own section's,
    // with the destinations' domain (a double star reaches any depth).
    expect(sectionOf('src/outbound/destinations/nats.ts')).toBe('§6 destinations: chat, paging, event bus')
    expect(sectionOf('src/domain/destinations/channel.ts')).toBe('§6 destinations: chat, paging, event bus')
  })

  it('a section’s shorter wait names a section, below the suite’s default', () => {
    for (const [section, ms] of Object.entries(WAIT_MS as Record<string, number>)) {
      expect(Object.keys(SCOPE)).toContain(section)
      expect(ms).toBeGreaterThanOrEqual(1000)
      expect(ms).toBeLessThan(15_000)
    }
  })

  it('a wait gives back the time a busy machine withheld from the run, and only while a clock is set', async () => {
    const never = () => Promise.resolve(false)
    const timed = async () => {
      const at = Date.now()
      await waitUntil('nothing', never, (v) => v, 300).catch(() => undefined)
      return Date.now() - at
    }
    // 250 ms withheld during the wait: it gives up after about 300 + 250 ms, not 300.
    const start = Date.now()
    giveBackWithheldTime(() => Math.min(250, Date.now() - start))
    try {
      expect(await timed()).toBeGreaterThanOrEqual(500)
    } finally {
      giveBackWithheldTime(undefined)
    }
    expect(await timed()).toBeLessThan(600)
    // At most its own timeout back: a server spinning in a loop waits for a CPU all the time.
    const spin = Date.now()
    giveBackWithheldTime(() => 20 * (Date.now() - spin))
    try {
      const ms = await timed()
      expect(ms).toBeGreaterThanOrEqual(550)
      expect(ms).toBeLessThan(1200)
    } finally {
      giveBackWithheldTime(undefined)
    }
  })

  it('--since finds the changed lines of the scope’s modules only, and counts their mutants', async () => {
    const dir = scratchDir('stryker-since-')
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' })
    git('init', '-q')
    git('config', 'user.email', 'ci@example.invalid')
    git('config', 'user.name', 'ci')
    mkdirSync(join(dir, 'src', 'domain'), { recursive: true })
    mkdirSync(join(dir, 'src', 'http'), { recursive: true })
    const lines = ['export function f(a: number): number {', '  return a + 1', '}', '']
    writeFileSync(join(dir, 'src', 'domain', 'scopes.ts'), lines.join('\n'))
    writeFileSync(join(dir, 'src', 'http', 'app.ts'), 'export const x = 1\n')
    git('add', '.')
    git('commit', '-qm', 'base')
    expect(changedRanges(dir, 'HEAD')).toEqual([])
    writeFileSync(join(dir, 'src', 'domain', 'scopes.ts'), lines.join('\n').replace('a + 1', 'a - 1'))
    writeFileSync(join(dir, 'src', 'http', 'app.ts'), 'export const x = 2\n')
    writeFileSync(join(dir, 'src', 'domain', 'cursors.ts'), 'export const y = 1 + 2\n')
    const ranges = changedRanges(dir, 'HEAD')
    expect(ranges).toEqual([
      { file: 'src/domain/scopes.ts', start: 2, end: 2 },
      { file: 'src/domain/cursors.ts', start: 1, end: 2 },
    ])
    const counts = await countMutants(dir, ranges)
    expect(counts[0]).toBeGreaterThan(0)
    expect(counts[1]).toBeGreaterThan(0)
  })

  /** The mutants StrykerJS places in `source` under the project's ignorers, by line (1: the source's first). */
  async function mutantsByLine(source: string) {
    const { mutants } = await new Instrumenter(quiet).instrument(
      [{ name: 'f.ts', content: source, mutate: true }],
      {
        plugins: null,
        excludedMutations: [],
        ignorers: [failureLogIgnorer, telemetryIgnorer, notFoundWordsIgnorer],
        noHeader: true,
      },
    )
    return (n: number) => mutants.filter((m) => m.location.start.line === n - 1)
  }

  it('the ignorers leave out log lines, metric calls and a 404 message’s words, with their reason, and nothing else', async () => {
    const source = [
      'export function f(failures: any, telemetry: any, metrics: any, notFound: any, a: number) {',
      "  failures.error({ err: a }, 'pass failed')",
      '  telemetry.changed(a > 1)',
      '  metrics?.messageSent()',
      "  Promise.resolve().catch((err: unknown) => failures.error({ err }, 'x'))",
      "  if (a > 2) throw notFound('Agent')",
      "  return a > 1 ? 'big' : 'small'",
      '}',
      'export function h(log: any, self: any, where: object, a: number) {',
      "  if (a > 1) log.warn({ ...where, reason: 'replayed' }, 'slack interaction refused')",
      "  self.log.info('[changes] ' + (a > 2 ? 'up' : 'down'))",
      "  log.fatal({ a }, 'not a level the ignorer knows')",
      '}',
    ].join('\n')
    const line = await mutantsByLine(source)
    for (const n of [2, 3, 4, 5, 11]) {
      expect(line(n).length, `line ${n}`).toBeGreaterThan(0)
      for (const m of line(n)) expect(m.status, `line ${n}`).toBe('Ignored')
    }
    expect(line(2)[0]!.statusReason).toMatch(/a log line/)
    expect(line(3)[0]!.statusReason).toMatch(/a metric/)
    // The 404's words are ignored; its condition is not.
    const words = line(6).filter((m) => m.replacement === '""')
    expect(words.map((m) => m.status)).toEqual(['Ignored'])
    expect(words[0]!.statusReason).toMatch(/404's message/)
    expect(line(6).filter((m) => m.status === undefined).length).toBeGreaterThan(0)
    expect(line(7).length).toBeGreaterThan(0)
    for (const m of line(7)) expect(m.status).toBeUndefined()
    // A pino log line is ignored; the condition that chooses whether to write it is not.
    const guarded = line(10)
    expect(guarded.filter((m) => m.status === 'Ignored').length).toBeGreaterThan(0)
    expect(guarded.filter((m) => m.status === undefined).length).toBeGreaterThan(0)
    for (const m of guarded.filter((m) => m.status === 'Ignored'))
      expect(m.statusReason).toMatch(/a log line/)
    expect(line(12).filter((m) => m.status === undefined).length).toBeGreaterThan(0)
  })

  it('the ignorers also leave out the lease counter and an if whose only work is metrics, but not an if that does more, nor a log chosen on the spot', async () => {
    const source = [
      'export function g(options: any, telemetry: any, CONSOLE: any, a: number, b: string) {',
      "  ;(options.failures ?? CONSOLE).error({ err: a }, 'attempt failed')",
      "  if (a > 0) options.leases?.takenOver('deliveries', a)",
      '  if (telemetry) {',
      "    telemetry.attempted(b === 'delivered' ? 'delivered' : 'failed')",
      "    if (b === 'failed') telemetry.gaveUp()",
      '  }',
      '  if (a > 3) {',
      '    telemetry.attempted(b)',
      '    a = a - 1',
      '  }',
      '  return a',
      '}',
    ].join('\n')
    const line = await mutantsByLine(source)
    for (const n of [3, 4, 5, 6]) {
      expect(line(n).length, `line ${n}`).toBeGreaterThan(0)
      for (const m of line(n)) expect(m.status, `line ${n}`).toBe('Ignored')
    }
    expect(line(3)[0]!.statusReason).toMatch(/a metric/)
    // Which log a call picks is judged: the `??` may choose one that throws. The reference picks it once, beforehand.
    expect(line(2).filter((m) => m.status === undefined).length).toBeGreaterThan(0)
    // An if that also changes state stays judged, its metric call apart.
    expect(line(8).filter((m) => m.status === undefined).length).toBeGreaterThan(0)
    for (const m of line(9)) expect(m.status).toBe('Ignored')
    expect(line(10).filter((m) => m.status === undefined).length).toBeGreaterThan(0)
  })

  it('every `Stryker restore` comment leads a statement, so the disable it ends does end there', () => {
    // StrykerJS reads its directives from the comments leading a statement. A restore written last in a block (the
    // next code a closing brace) binds to nothing, and the disable before it runs on to the next restore that does:
    // one such comment had left 92 mutants of the idempotency claim annotated without a word about them.
    const root = join(import.meta.dirname, '..', '..')
    const files = execFileSync('git', ['ls-files', 'src'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.endsWith('.ts'))
    const idle: string[] = []
    for (const file of files) {
      const lines = readFileSync(join(root, file), 'utf8').split('\n')
      lines.forEach((line, i) => {
        if (!/\/\/\s*Stryker restore/.test(line)) return
        const code = lines.slice(i + 1).filter((l) => l.trim() !== '' && !l.trim().startsWith('//'))
        // Closing brackets only to the end of the file: nothing follows that the disable could reach.
        const reachesOn = code.some((l) => !/^\s*[}\])][,;)}\]]*\s*$/.test(l))
        if (code.length > 0 && /^\s*[}\])]/.test(code[0]!) && reachesOn) idle.push(`${file}:${i + 1}`)
      })
    }
    expect(idle).toEqual([])
  })

  it('annotations stay within the cap: at most 15 % of the whole scope’s mutants', async () => {
    // Each `Stryker disable` comment and each ignored log line or metric call counts, as the run counts them.
    const { mutants } = await instrumentedScope()
    const annotated = mutants.filter((m) => m.status === 'Ignored').length
    expect(mutants.length).toBeGreaterThan(1000)
    expect(
      annotated / mutants.length,
      `${annotated} of ${mutants.length} mutants annotated: past the 15 % cap`,
    ).toBeLessThanOrEqual(0.15)
  })

  it('every `Stryker disable next-line` comment disables a mutant of each mutator it names', async () => {
    // StrykerJS binds a directive to the node its comment leads: one inside a method chain or before an `else if`
    // leads nothing and disables nothing, while its reason reads as if it did.
    const { files, mutants, source } = await instrumentedScope()
    const dead: string[] = []
    for (const file of files) {
      const lines = source(file).split('\n')
      lines.forEach((line, i) => {
        const directive = /\/\/\s*Stryker disable next-line ([\w,]+)(?::\s*(.*))?$/.exec(line)
        if (!directive || directive[1] === 'all') return
        let next = i + 1
        while (next < lines.length && lines[next]!.trim().startsWith('//')) next++
        const reason = directive[2]?.trim()
        // Locations count lines from 0: the mutants of the node the comment leads start on its line or below it.
        const near = mutants.filter(
          (m) =>
            m.fileName === file &&
            m.status === 'Ignored' &&
            m.location.start.line >= next &&
            m.location.start.line <= next + 40 &&
            (reason === undefined || m.statusReason === reason),
        )
        for (const mutator of directive[1]!.split(','))
          if (!near.some((m) => m.mutatorName === mutator)) dead.push(`${file}:${i + 1} ${mutator}`)
      })
    }
    expect(dead).toEqual([])
  })

  it("a section's dry-run test keeps only its own modules' mutants (the rest NoCoverage for it)", () => {
    const dir = scratchDir('stryker-own-')
    mkdirSync(join(dir, 'src', 'domain', 'idempotency'), { recursive: true })
    writeFileSync(join(dir, 'src', 'domain', 'cursors.ts'), 'const a = stryMutAct_9fa48("1") ? 0 : 1\n')
    writeFileSync(
      join(dir, 'src', 'domain', 'idempotency', 'key.ts'),
      'const b = stryMutAct_9fa48("2") ? 0 : stryMutAct_9fa48("3") ? 1 : 2\n',
    )
    writeFileSync(join(dir, 'src', 'domain', 'idempotency', 'ports.ts'), 'stryMutAct_9fa48("4")\n')
    const bySection = mutantsBySection(dir) as Map<string, Set<string>>
    expect([...bySection.keys()].sort()).toEqual(['§8 idempotency', '§8 pagination and cursors'])
    expect([...bySection.get('§8 idempotency')!].sort()).toEqual(['2', '3'])
    const coverage = ownSectionCoverage(
      {
        static: { '1': 1 },
        perTest: { '§8 idempotency': { '1': 2, '2': 1 }, '§8 pagination and cursors': { '1': 1, '3': 4 } },
      },
      bySection,
    )
    expect(coverage).toEqual({
      static: { '1': 1 },
      perTest: { '§8 idempotency': { '2': 1 }, '§8 pagination and cursors': { '1': 1 } },
    })
  })

  it('the command answers --help with its usage, and an unknown or incomplete option with the reason and exit 2', () => {
    const command = join(import.meta.dirname, '..', 'stryker', 'run.mjs')
    const run = (...args: string[]) => spawnSync(process.execPath, [command, ...args], { encoding: 'utf8' })
    const help = run('--help')
    expect(help.status).toBe(0)
    expect(help.stdout).toMatch(/^usage: node conformance\/stryker\/run\.mjs .*--section TEXT/)
    const unknown = run('--bogus')
    expect(unknown.status).toBe(2)
    expect(unknown.stderr).toMatch(/Unknown option '--bogus'\nusage: /)
    const missing = run('--section')
    expect(missing.status).toBe(2)
    expect(missing.stderr).toMatch(/--section <value>' argument missing/)
    const alone = run('--uncovered-only')
    expect(alone.status).toBe(2)
    expect(alone.stderr).toMatch(/--uncovered-only .* it needs --also-postgres/)
  })
})
