/**
 * A Markdown summary for pull-request comments and job summaries: the verdict first, then the core results; the
 * profile results (the reference profile's gap decisions) folded away, and what of the contract the run exercised.
 */
import type { ContractCoverage, Tally } from '../coverage.js'
import { STATEMENTS } from '../statements.js'
import { type CheckResult, profileGroups, type RunSummary, summarize } from '../types.js'
import { reasonWithFix, trim } from './text.js'

const ICON = { pass: '✅', fail: '❌', skip: '⏭️', partial: '◐' } as const
const VERDICT_ICON = { CONFORMANT: '✅', 'NOT CONFORMANT': '❌', INCOMPLETE: '⚠️', ERROR: '💥' } as const

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ')
}

function table(results: CheckResult[]): string[] {
  // Failures first, then skips, then passes: the line that matters is never buried.
  const order = { fail: 0, partial: 1, skip: 2, pass: 3 } as const
  const sorted = [...results].sort((a, b) => order[a.outcome] - order[b.outcome])
  return [
    '| | check | spec | note |',
    '|---|---|---|---|',
    ...sorted.map(
      (r) =>
        `| ${ICON[r.outcome]} | \`${r.id}\` ${cell(r.title)} | ${r.clauses.join(', ')} | ${cell(reasonWithFix(r))} |`,
    ),
  ]
}

/** Profile checks of a spec sentence, each with the sentences it relies on quoted. */
function sentenceTable(results: CheckResult[]): string[] {
  const text = new Map(STATEMENTS.map((s) => [s.id, s.text]))
  return [
    '| | check | spec sentence | note |',
    '|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${ICON[r.outcome]} | \`${r.id}\` ${cell(r.title)} | ${cell(r.clauses.map((c) => `${c} "${text.get(c) ?? ''}"`).join(' '))} | ${cell(trim(r.message ?? '', 200))} |`,
    ),
  ]
}

function tallyRow(name: string, t: Tally): string {
  const done = t.documented.length - t.missing.length
  const named = t.missing.map((m) => (t.why?.[m] ? `\`${m}\` (${t.why[m]})` : `\`${m}\``))
  return `| ${name} | ${done}/${t.documented.length} | ${named.length > 0 ? named.join(', ') : '—'} |`
}

export function coverageMarkdown(c: ContractCoverage): string[] {
  const lines = [
    '## What of the contract the run exercised',
    '',
    '| what | exercised | not exercised |',
    '|---|---|---|',
    `| operation × documented response | ${c.responses.produced}/${c.responses.reachable} | see below; besides, ${c.responses.documented - c.responses.reachable} documented 500/503 answers no client can provoke |`,
    tallyRow('event kinds delivered', c.events),
    tallyRow('trace levels requested', c.traceLevels),
    tallyRow('trace frame kinds read', c.traceFrameKinds),
    tallyRow('stream messages sent', c.streamClientMessages),
    tallyRow('stream messages received', c.streamServerMessages),
    `| error paths | ${Object.values(c.errorPaths).filter((p) => p.exercised).length}/${Object.keys(c.errorPaths).length} | ${
      Object.entries(c.errorPaths)
        .filter(([, p]) => !p.exercised)
        .map(([k]) => `\`${k}\``)
        .join(', ') || '—'
    } |`,
    `| lifecycle interactions | ${Object.values(c.lifecycle).filter((p) => p.exercised).length}/${Object.keys(c.lifecycle).length} | ${
      Object.entries(c.lifecycle)
        .filter(([, p]) => !p.exercised)
        .map(([k]) => `\`${k}\``)
        .join(', ') || '—'
    } |`,
    '',
    '<details><summary>Documented responses the run did not produce</summary>',
    '',
    ...Object.entries(c.notes).map(([status, why]) => `- ${status} (not counted): ${why}`),
    ...Object.entries(c.gaps ?? {}).map(([status, why]) => `- ${status} (counted, still missing): ${why}`),
    '',
    '| operation | not produced |',
    '|---|---|',
  ]
  for (const op of c.operations)
    if (op.missing.length > 0) lines.push(`| \`${op.method} ${op.path}\` | ${op.missing.join(', ')} |`)
  lines.push('', '</details>', '')
  return lines
}

export function toMarkdown(summary: RunSummary): string {
  const c = summarize(summary.results)
  const v = summary.verdict
  const lines = ['# Agent Operations API conformance', '']
  if (v) lines.push(`## ${VERDICT_ICON[v.verdict]} ${v.verdict}`, '', cell(v.line), '')
  lines.push(
    `Target: \`${summary.baseUrl}\` · ${summary.startedAt} · seed ${summary.seed} · ${summary.requestsUsed} requests`,
    '',
    '| level | passed | failed | skipped | partial |',
    '|---|---|---|---|---|',
    `| core | ${c.core.pass} | ${c.core.fail} | ${c.core.skip} | ${c.core.partial} |`,
    `| profile | ${c.profile.pass} | ${c.profile.fail} | ${c.profile.skip} | ${c.profile.partial} |`,
    '',
  )
  if (summary.traceability) {
    lines.push(
      `Spec coverage: ${summary.traceability.covered} of ${summary.traceability.statements} normative statements are mapped to checks.`,
      '',
    )
  }
  if (summary.internalError) lines.push(`**The run ended early:** ${cell(summary.internalError)}`, '')
  const core = summary.results.filter((r) => r.level === 'core')
  const profile = summary.results.filter((r) => r.level === 'profile')
  lines.push('## Core checks (the spec demands these)', '', ...table(core), '')
  if (profile.length > 0) {
    const { sentences, silent } = profileGroups(summary.results)
    const failed = (rs: CheckResult[]) => rs.filter((r) => r.outcome === 'fail').length
    lines.push(
      `## Profile checks of a spec sentence: ${sentences.length - failed(sentences)} of ${sentences.length} without failure`,
      '',
      'They check what a spec sentence says, in a way the suite cannot yet hold every deployment to.',
      '',
      ...sentenceTable(sentences),
      '',
      `<details><summary>Where the spec is silent: ${failed(silent)} of ${silent.length} profile checks differ from the reference's choices</summary>`,
      '',
      '| | check | the spec’s gap | note |',
      '|---|---|---|---|',
      ...silent.map(
        (r) =>
          `| ${ICON[r.outcome]} | \`${r.id}\` ${cell(r.title)} | ${cell(r.gap ?? '')} | ${cell(trim(r.message ?? '', 200))} |`,
      ),
      '',
      '</details>',
      '',
    )
  }
  if (summary.coverage) lines.push(...coverageMarkdown(summary.coverage))
  return `${lines.join('\n')}\n`
}
