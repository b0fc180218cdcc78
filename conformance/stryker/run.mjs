#!/usr/bin/env node
/**
 * `npm run conformance:stryker`: StrykerJS mutates the reference server's spec-bearing modules (scope.mjs) and the
 * conformance suite, run against each mutated reference (suite.mjs, Stryker's command runner), is the only test.
 * Writes Stryker's HTML and JSON reports to reports/stryker/ and a per-spec-section table (killed at core, by
 * profile only, survived, annotated) to reports/stryker/sections.json, and prints the time it took.
 *
 *   node conformance/stryker/run.mjs [--since REF] [--incremental] [--mutate GLOB,...] [--concurrency N]
 *
 * --since REF    mutate only the scope's files changed since REF (git diff), the quick run
 * --incremental  Stryker's incremental mode: mutants of unchanged code keep their last result
 * --mutate       a subset of the scope (globs, or file:line-line ranges as Stryker takes them)
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { Stryker } from '@stryker-mutator/core'
import { SCOPE, scopeGlobs } from './scope.mjs'

const root = join(import.meta.dirname, '..', '..')
const out = join(root, 'reports', 'stryker')
const { values } = parseArgs({
  options: {
    since: { type: 'string' },
    incremental: { type: 'boolean' },
    mutate: { type: 'string' },
    concurrency: { type: 'string' },
  },
  strict: true,
})

/** The scope's files changed since a ref (committed or not). */
function changedSince(ref) {
  const names = execFileSync('git', ['diff', '--name-only', ref, '--', 'src'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f.endsWith('.ts') && existsSync(join(root, f)))
  return names.filter((f) => sectionOf(f) !== undefined && !f.endsWith('/ports.ts'))
}

/** A glob of scope.mjs as a RegExp over repository paths. */
const globRe = (glob) =>
  new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*\*\/\*/g, '.*')
      .replace(/\*/g, '[^/]*')}$`,
  )

function sectionOf(file) {
  for (const [section, globs] of Object.entries(SCOPE))
    if (globs.some((g) => globRe(g).test(file))) return section
  return undefined
}

let mutate = values.mutate ? values.mutate.split(',') : scopeGlobs()
if (values.since) {
  mutate = changedSince(values.since)
  if (mutate.length === 0) {
    console.log(
      `conformance:stryker: no spec-bearing module changed since ${values.since}; nothing to mutate`,
    )
    process.exit(0)
  }
}
const suiteReports = join(out, 'suite')
rmSync(suiteReports, { recursive: true, force: true })
mkdirSync(suiteReports, { recursive: true })
process.env.STRYKER_SUITE_REPORTS = suiteReports

const started = Date.now()
const stryker = new Stryker({
  packageManager: 'npm',
  testRunner: 'command',
  commandRunner: { command: 'node conformance/stryker/suite.mjs' },
  // The reference runs compiled (bin/agentops.mjs runs dist/): the sandbox builds its mutated sources once.
  buildCommand: 'node scripts/build.mjs',
  coverageAnalysis: 'off',
  mutate,
  ignorePatterns: ['dist', 'docs', 'bench', 'test', 'reports', 'coverage', '.agentops', 'conformance/bundle'],
  concurrency: Number(values.concurrency ?? 1),
  timeoutMS: 60_000,
  timeoutFactor: 1.5,
  incremental: values.incremental === true,
  incrementalFile: join(out, 'incremental.json'),
  reporters: ['html', 'json', 'clear-text', 'progress'],
  htmlReporter: { fileName: join(out, 'index.html') },
  jsonReporter: { fileName: join(out, 'mutation.json') },
  tempDirName: join(root, '.stryker-tmp'),
  cleanTempDir: true,
  disableTypeChecks: true,
})
const results = await stryker.runMutationTest()
const seconds = (Date.now() - started) / 1000

/** How the suite killed a mutant: a core failure, or profile failures only (from its JSON report). */
function killedBy(id) {
  const file = join(suiteReports, `${id}.json`)
  if (!existsSync(file)) return 'core'
  const report = JSON.parse(readFileSync(file, 'utf8'))
  const failed = report.results.filter((r) => r.outcome === 'fail')
  return failed.some((r) => r.level === 'core') || report.verdict?.verdict !== 'NOT CONFORMANT'
    ? 'core'
    : 'profile'
}

const sections = {}
for (const m of results) {
  const section = sectionOf(relative(root, m.fileName)) ?? '(outside the scope)'
  sections[section] ??= { killedAtCore: 0, killedByProfileOnly: 0, survived: 0, annotated: 0 }
  const row = sections[section]
  if (m.status === 'Ignored') row.annotated++
  else if (m.status === 'Killed' || m.status === 'Timeout')
    row[killedBy(m.id) === 'core' ? 'killedAtCore' : 'killedByProfileOnly']++
  else if (m.status === 'Survived' || m.status === 'NoCoverage') row.survived++
}
const total = Object.values(sections).reduce(
  (t, r) => ({
    killedAtCore: t.killedAtCore + r.killedAtCore,
    killedByProfileOnly: t.killedByProfileOnly + r.killedByProfileOnly,
    survived: t.survived + r.survived,
    annotated: t.annotated + r.annotated,
  }),
  { killedAtCore: 0, killedByProfileOnly: 0, survived: 0, annotated: 0 },
)
const judged = total.killedAtCore + total.killedByProfileOnly + total.survived
const summary = {
  seconds: Math.round(seconds),
  mutants: results.length,
  mutate,
  killed: judged ? (total.killedAtCore + total.killedByProfileOnly) / judged : null,
  killedAtCore: judged ? total.killedAtCore / judged : null,
  annotated: results.length ? total.annotated / results.length : null,
  sections,
  total,
}
writeFileSync(join(out, 'sections.json'), `${JSON.stringify(summary, null, 2)}\n`)
console.log(
  '\n| spec section | killed at core | by profile only | survived | annotated |\n|---|---|---|---|---|',
)
for (const [s, r] of Object.entries(sections))
  console.log(`| ${s} | ${r.killedAtCore} | ${r.killedByProfileOnly} | ${r.survived} | ${r.annotated} |`)
const pct = (x) => (x === null ? '-' : `${(x * 100).toFixed(1)} %`)
console.log(
  `\nconformance:stryker: ${results.length} mutants in ${seconds.toFixed(0)} s (${(seconds / Math.max(1, results.length)).toFixed(1)} s each); killed ${pct(summary.killed)} of those not annotated, ${pct(summary.killedAtCore)} at core; annotated ${pct(summary.annotated)}; HTML report ${relative(root, join(out, 'index.html'))}`,
)
