/** The machine-readable report: the whole summary, with counts up front. */
import { type RunSummary, summarize } from '../types.js'

export function toJson(summary: RunSummary): string {
  return `${JSON.stringify({ counts: summarize(summary.results), ...summary }, null, 2)}\n`
}
