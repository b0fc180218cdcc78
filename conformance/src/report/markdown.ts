/** A Markdown summary for pull-request comments and job summaries. */
import { type RunSummary, summarize } from '../types.js'
import { trim } from './text.js'

const ICON = { pass: '✅', fail: '❌', skip: '⏭️' } as const

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ')
}

export function toMarkdown(summary: RunSummary): string {
  const c = summarize(summary.results)
  const lines = [
    '# Agent Operations API conformance',
    '',
    `Target: \`${summary.baseUrl}\` · ${summary.startedAt} · seed ${summary.seed} · ${summary.requestsUsed} requests`,
    '',
    '| level | passed | failed | skipped |',
    '|---|---|---|---|',
    `| core | ${c.core.pass} | ${c.core.fail} | ${c.core.skip} |`,
    `| profile | ${c.profile.pass} | ${c.profile.fail} | ${c.profile.skip} |`,
    '',
  ]
  if (summary.traceability) {
    lines.push(
      `Spec coverage: ${summary.traceability.covered} of ${summary.traceability.statements} normative statements are mapped to checks.`,
      '',
    )
  }
  if (summary.internalError) lines.push(`**The run ended early:** ${cell(summary.internalError)}`, '')
  lines.push('| | check | level | spec | note |', '|---|---|---|---|---|')
  for (const r of summary.results) {
    lines.push(
      `| ${ICON[r.outcome]} | \`${r.id}\` ${cell(r.title)} | ${r.level} | ${r.clauses.join(', ')} | ${cell(trim(r.message ?? '', 200))} |`,
    )
  }
  return `${lines.join('\n')}\n`
}
