#!/usr/bin/env node
/**
 * `npm run conformance:stryker:audit`: the annotations of a whole-scope run audited. Every mutant the run's report
 * shows annotated by a `// Stryker disable` comment is judged by the suite as any other, in a copy of HEAD (a git
 * worktree) whose comments are made plain ones (annotations.mjs `neutralized`: every line and column kept, so the
 * report's places name the same code). A mutant the suite kills there is one its comment claimed too much for, or
 * the other variant of a mutator whose equivalent variant on the same line the comment is for (a comment names
 * mutators, not variants). Writes reports/stryker/annotations-audit.json and prints each kill with its comment.
 *
 *   node conformance/stryker/audit-annotations.mjs [--report FILE] [--concurrency N]
 *
 * --report FILE  the whole-scope run's JSON report (default reports/stryker/mutation.json); files whose sources in it
 *                differ from HEAD's are left out, their places naming other code
 * --concurrency N passed to run.mjs
 *
 * The ignorer plugins' classes (log lines, metric calls, a 404's words: ignorers.mjs) stay ignored: they are no
 * comment's claim.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { annotatedRanges, auditFindings, neutralized } from './annotations.mjs'

const root = join(import.meta.dirname, '..', '..')
const { values } = parseArgs({
  options: { report: { type: 'string' }, concurrency: { type: 'string' } },
  strict: true,
})
const reportFile = values.report ?? join(root, 'reports', 'stryker', 'mutation.json')
if (!existsSync(reportFile)) {
  console.error(
    `conformance:stryker:audit: no report at ${reportFile}: run npm run conformance:stryker first`,
  )
  process.exit(2)
}
const original = JSON.parse(readFileSync(reportFile, 'utf8'))

const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 })
/** The report's files whose sources are HEAD's: only there do its places name the code a copy of HEAD has. */
const current = new Set(
  Object.entries(original.files)
    .filter(([file, { source }]) => {
      try {
        return git('show', `HEAD:${file}`) === source
      } catch {
        return false
      }
    })
    .map(([file]) => file),
)
const left = Object.keys(original.files).length - current.size
if (left > 0)
  console.log(`conformance:stryker:audit: ${left} file(s) of the report differ from HEAD and are left out`)
const ranges = annotatedRanges(original, current)
if (ranges.length === 0) {
  console.log('conformance:stryker:audit: no mutant annotated by a comment in the report; nothing to audit')
  process.exit(0)
}

const copy = mkdtempSync(join(tmpdir(), 'agentops-audit-'))
git('worktree', 'add', '--detach', '--force', copy, 'HEAD')
let status = 1
try {
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir')
  for (const entry of readdirSync(join(copy, 'src'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue
    const path = join(entry.parentPath, entry.name)
    const text = readFileSync(path, 'utf8')
    const plain = neutralized(text)
    if (plain !== text) writeFileSync(path, plain)
  }
  console.log(`conformance:stryker:audit: ${ranges.length} place(s) of annotated mutants, judged in ${copy}`)
  const args = ['conformance/stryker/run.mjs', '--mutate', ranges.join(',')]
  if (values.concurrency) args.push('--concurrency', values.concurrency)
  const run = spawnSync(process.execPath, args, { cwd: copy, stdio: 'inherit' })
  status = run.status ?? 1
  if (status !== 0) console.error(`conformance:stryker:audit: the run in the copy ended with ${status}`)
  else report(JSON.parse(readFileSync(join(copy, 'reports', 'stryker', 'mutation.json'), 'utf8')))
} finally {
  git('worktree', 'remove', '--force', copy)
}
process.exit(status)

/** Writes reports/stryker/annotations-audit.json and prints what the suite killed. */
function report(audited) {
  const findings = auditFindings(original, audited)
  writeFileSync(
    join(root, 'reports', 'stryker', 'annotations-audit.json'),
    `${JSON.stringify({ report: reportFile, ...findings }, null, 2)}\n`,
  )
  for (const k of findings.killed)
    console.log(
      `${k.file}:${k.line} ${k.mutator} -> ${k.replacement.replace(/\s+/g, ' ').slice(0, 60)}${k.besideAnEscapedVariant ? ' (another variant escapes)' : ''}\n  killed by: ${k.killedBy.split('\n')[0]}\n  comment: ${k.reason}`,
    )
  console.log(
    `conformance:stryker:audit: ${findings.annotated} mutants annotated by comment, ${findings.judged} judged; killed ${findings.killed.length}: ${findings.killedWhole} with every variant of their mutator on the line, ${findings.killedBesideAnEscapedVariant} beside a variant that escapes (reports/stryker/annotations-audit.json)`,
  )
}
