/**
 * Writes traceability.md from the checks' clauses and src/statements.ts; `--check` fails when the file differs
 * (the drift check, run by the traceability test and by `npm run traceability:check`).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ALL_CHECKS } from '../src/checks/index.js'
import { renderTraceability } from '../src/traceability.js'

export const TRACEABILITY_PATH = join(import.meta.dirname, '..', 'traceability.md')

if (import.meta.url === `file://${process.argv[1]}`) {
  const want = renderTraceability(ALL_CHECKS)
  if (process.argv.includes('--check')) {
    let have = ''
    try {
      have = readFileSync(TRACEABILITY_PATH, 'utf8')
    } catch {
      // missing counts as drift
    }
    if (have !== want) {
      process.stderr.write(
        'traceability.md is out of date: run npm run traceability -w agentops-conformance\n',
      )
      process.exitCode = 1
    }
  } else {
    writeFileSync(TRACEABILITY_PATH, want)
    process.stdout.write(`wrote ${TRACEABILITY_PATH}\n`)
  }
}
