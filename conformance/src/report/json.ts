/** The machine-readable report: the verdict and counts up front, then the whole summary. */
import { type CheckResult, profileGroups, type RunSummary, summarize } from '../types.js'

export function toJson(summary: RunSummary): string {
  const { verdict, ...rest } = summary
  const { sentences, silent } = profileGroups(summary.results)
  const failed = (rs: CheckResult[]) => rs.filter((r) => r.outcome === 'fail').map((r) => r.id)
  const byGap: Record<string, string[]> = {}
  for (const r of silent) if (r.outcome === 'fail') byGap[r.gap ?? ''] = [...(byGap[r.gap ?? ''] ?? []), r.id]
  const profile = {
    specSentences: { checks: sentences.length, failed: failed(sentences) },
    whereSpecIsSilent: { checks: silent.length, differ: failed(silent).length, byGap },
  }
  return `${JSON.stringify({ verdict, counts: summarize(summary.results), profile, ...rest }, null, 2)}\n`
}
