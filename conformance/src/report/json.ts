/** The machine-readable report: the verdict and counts up front, then the whole summary. */
import { type RunSummary, summarize } from '../types.js'

export function toJson(summary: RunSummary): string {
  const { verdict, ...rest } = summary
  return `${JSON.stringify({ verdict, counts: summarize(summary.results), ...rest }, null, 2)}\n`
}
