/**
 * The quick run's selection (`--since REF`): the lines of the scope's modules changed since REF (committed, staged,
 * not yet staged, or in new files), as Stryker's `file:start-end` ranges, and how many mutants they hold (Stryker's
 * own instrumenter, so the count is the one the run will have), so a CI job can cap what it mutates.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sectionOf } from './scope.mjs'

const git = (root, args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' })

/** `[{ file, start, end }]`: the changed lines (1-based, inclusive) of the scope's modules since `ref`. */
export function changedRanges(root, ref) {
  const ranges = []
  let file
  for (const line of git(root, ['diff', '-U0', '--no-color', ref, '--', 'src']).split('\n')) {
    if (line.startsWith('+++ ')) {
      const path = line.slice(4).replace(/^b\//, '')
      file = path !== '/dev/null' && path.endsWith('.ts') && sectionOf(path) ? path : undefined
      continue
    }
    const hunk = /^@@ -\S+ \+(\d+)(?:,(\d+))? @@/.exec(line)
    if (!hunk || !file || !existsSync(join(root, file))) continue
    const start = Number(hunk[1])
    const count = hunk[2] === undefined ? 1 : Number(hunk[2])
    if (count > 0) ranges.push({ file, start, end: start + count - 1 })
  }
  // Files git does not know yet are changed whole.
  for (const path of git(root, ['ls-files', '--others', '--exclude-standard', '--', 'src']).split('\n')) {
    if (!path.endsWith('.ts') || !sectionOf(path)) continue
    const lines = readFileSync(join(root, path), 'utf8').split('\n').length
    ranges.push({ file: path, start: 1, end: lines })
  }
  return ranges
}

/** A Stryker logger that says nothing (the instrumenter's, and a test's runner's). */
export const quiet = {
  isTraceEnabled: () => false,
  isDebugEnabled: () => false,
  isInfoEnabled: () => false,
  isWarnEnabled: () => false,
  isErrorEnabled: () => false,
  isFatalEnabled: () => false,
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
  fatal() {},
}

/** How many mutants each range holds (the ones a `// Stryker disable` comment or an ignorer of ignorers.mjs leaves out are not counted). */
export async function countMutants(root, ranges) {
  const { Instrumenter } = await import('@stryker-mutator/instrumenter')
  const { failureLogIgnorer, notFoundWordsIgnorer, telemetryIgnorer } = await import('./ignorers.mjs')
  const instrumenter = new Instrumenter(quiet)
  const counts = []
  for (const r of ranges) {
    const result = await instrumenter.instrument(
      [
        {
          name: r.file,
          content: readFileSync(join(root, r.file), 'utf8'),
          mutate: [
            {
              start: { line: r.start - 1, column: 0 },
              end: { line: r.end - 1, column: Number.MAX_SAFE_INTEGER },
            },
          ],
        },
      ],
      {
        plugins: null,
        excludedMutations: [],
        ignorers: [failureLogIgnorer, telemetryIgnorer, notFoundWordsIgnorer],
        noHeader: true,
      },
    )
    counts.push(result.mutants.filter((m) => m.status === undefined).length)
  }
  return counts
}

/** `file:start-end` as Stryker's `mutate` takes a range. */
export const asMutate = (r) => `${r.file}:${r.start}-${r.end}`
