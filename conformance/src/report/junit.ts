/** JUnit XML as CI systems read it: one <testsuite> per level and family, one <testcase> per check. */
import type { CheckResult, RunSummary } from '../types.js'
import { formatExchange } from './text.js'

/** XML 1.0 cannot carry most control characters, even escaped. */
function xmlChar(cp: number): boolean {
  return (
    cp === 0x9 ||
    cp === 0xa ||
    cp === 0xd ||
    (cp >= 0x20 && cp <= 0xd7ff) ||
    (cp >= 0xe000 && cp <= 0xfffd) ||
    cp >= 0x10000
  )
}

export function xmlEscape(text: string): string {
  return [...text]
    .map((ch) => (xmlChar(ch.codePointAt(0) ?? 0) ? ch : '\uFFFD'))
    .join('')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
}

export function toJunit(summary: RunSummary): string {
  const groups = new Map<string, CheckResult[]>()
  for (const r of summary.results) {
    const key = `${r.level}.${r.family}`
    groups.set(key, [...(groups.get(key) ?? []), r])
  }
  const totalTime = (results: CheckResult[]) =>
    (results.reduce((s, r) => s + r.durationMs, 0) / 1000).toFixed(3)
  const suites = [...groups.entries()].map(([name, results]) => {
    const failures = results.filter((r) => r.outcome === 'fail').length
    const skipped = results.filter((r) => r.outcome === 'skip').length
    const cases = results.map((r) => {
      const attrs = `name="${xmlEscape(`${r.id}: ${r.title}`)}" classname="${xmlEscape(`conformance.${name}`)}" time="${(r.durationMs / 1000).toFixed(3)}"`
      const props = `<properties><property name="level" value="${r.level}"/><property name="spec" value="${xmlEscape(r.clauses.join(' '))}"/></properties>`
      if (r.outcome === 'pass') return `    <testcase ${attrs}>${props}</testcase>`
      if (r.outcome === 'skip') {
        return `    <testcase ${attrs}>${props}<skipped message="${xmlEscape(r.message ?? '')}"/></testcase>`
      }
      const detail = [r.message ?? '', ...r.exchanges.map((x) => formatExchange(x, ''))].join('\n')
      return `    <testcase ${attrs}>${props}<failure message="${xmlEscape(r.message ?? 'failed')}" type="${r.level}">${xmlEscape(detail)}</failure></testcase>`
    })
    return `  <testsuite name="${xmlEscape(name)}" tests="${results.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${totalTime(results)}" timestamp="${summary.startedAt.replace(/Z$/, '')}">\n${cases.join('\n')}\n  </testsuite>`
  })
  // An error that ended the run early is a JUnit <error>, so CI shows it next to whatever checks did run.
  if (summary.internalError) {
    suites.push(
      `  <testsuite name="suite" tests="1" failures="0" errors="1" skipped="0" time="0" timestamp="${summary.startedAt.replace(/Z$/, '')}">\n    <testcase name="suite: the run completed" classname="conformance.suite" time="0"><error message="${xmlEscape(summary.internalError)}" type="internal">${xmlEscape(summary.internalError)}</error></testcase>\n  </testsuite>`,
    )
  }
  const all = summary.results
  const errors = summary.internalError ? 1 : 0
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="agentops-conformance" tests="${all.length + errors}" failures="${all.filter((r) => r.outcome === 'fail').length}" errors="${errors}" skipped="${all.filter((r) => r.outcome === 'skip').length}" time="${totalTime(all)}">
${suites.join('\n')}
</testsuites>
`
}
