import { existsSync, readFileSync } from 'node:fs'
import type { CheckResult } from '../../conformance/src/types.js'

/**
 * The checks of a conformance run's JSON report that neither passed nor were skipped, each with its reason, one a
 * line: put last in an assertion's message, where a log that keeps only the end of a long output still shows them.
 */
export function checksNotPassed(reportFile: string): string {
  if (!existsSync(reportFile)) return `(no report at ${reportFile})`
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as { results: CheckResult[] }
  return report.results
    .filter((r) => r.outcome !== 'pass' && r.outcome !== 'skip')
    .map((r) => `${r.outcome} ${r.level} ${r.id}: ${r.message ?? ''}`)
    .join('\n')
}
