/** JUnit XML as CI systems read it: one <testsuite> per level and family, one <testcase> per check. */
import type { CheckResult, RunSummary } from '../types.js'
import { formatExchange, reasonWithFix } from './text.js'

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

/** Skipped, or only partly run: what JUnit can show as `<skipped>`. */
const notRun = (r: CheckResult) => r.outcome === 'skip' || r.outcome === 'partial'

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
    const skipped = results.filter(notRun).length
    const cases = results.map((r) => {
      const attrs = `name="${xmlEscape(`${r.id}: ${r.title}`)}" classname="${xmlEscape(`conformance.${name}`)}" time="${(r.durationMs / 1000).toFixed(3)}"`
      const props = `<properties><property name="level" value="${r.level}"/><property name="spec" value="${xmlEscape(r.clauses.join(' '))}"/><property name="outcome" value="${r.outcome}"/></properties>`
      if (r.outcome === 'pass') return `    <testcase ${attrs}>${props}</testcase>`
      if (r.outcome === 'skip') {
        return `    <testcase ${attrs}>${props}<skipped message="${xmlEscape(reasonWithFix(r))}"/></testcase>`
      }
      // JUnit has no "partial": a check a part of which did not run is shown skipped, never as a pass.
      if (r.outcome === 'partial') {
        return `    <testcase ${attrs}>${props}<skipped message="${xmlEscape(`partial: ${reasonWithFix(r)}`)}"/></testcase>`
      }
      const detail = [reasonWithFix(r), ...r.exchanges.map((x) => formatExchange(x, ''))].join('\n')
      return `    <testcase ${attrs}>${props}<failure message="${xmlEscape(reasonWithFix(r) || 'failed')}" type="${r.level}">${xmlEscape(detail)}</failure></testcase>`
    })
    return `  <testsuite name="${xmlEscape(name)}" tests="${results.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${totalTime(results)}" timestamp="${summary.startedAt.replace(/Z$/, '')}">\n${cases.join('\n')}\n  </testsuite>`
  })
  // An error that ended the run early is a JUnit <error>, so CI shows it next to whatever checks did run.
  if (summary.internalError) {
    suites.push(
      `  <testsuite name="suite" tests="1" failures="0" errors="1" skipped="0" time="0" timestamp="${summary.startedAt.replace(/Z$/, '')}">\n    <testcase name="suite: the run completed" classname="conformance.suite" time="0"><error message="${xmlEscape(summary.internalError)}" type="internal">${xmlEscape(summary.internalError)}</error></testcase>\n  </testsuite>`,
    )
  }
  // The verdict first, as a test case of its own: CI shows it next to the checks (failed when NOT CONFORMANT,
  // skipped when INCOMPLETE unless --allow-incomplete accepted it), with its parts as properties.
  const v = summary.verdict
  let verdictCases = 0
  let verdictFailures = 0
  let verdictSkipped = 0
  if (v && v.verdict !== 'ERROR') {
    verdictCases = 1
    const props = `<properties><property name="verdict" value="${xmlEscape(v.verdict)}"/><property name="exit-code" value="${v.exitCode}"/><property name="needs" value="${xmlEscape(v.needs.join(' '))}"/></properties>`
    let body = props
    if (v.verdict === 'NOT CONFORMANT') {
      verdictFailures = 1
      body += `<failure message="${xmlEscape(v.line)}" type="verdict">${xmlEscape(v.line)}</failure>`
    } else if (v.verdict === 'INCOMPLETE' && !v.allowIncomplete) {
      verdictSkipped = 1
      body += `<skipped message="${xmlEscape(v.line)}"/>`
    }
    suites.unshift(
      `  <testsuite name="verdict" tests="1" failures="${verdictFailures}" errors="0" skipped="${verdictSkipped}" time="0" timestamp="${summary.startedAt.replace(/Z$/, '')}">
    <testcase name="${xmlEscape(`verdict: ${v.line}`)}" classname="conformance.verdict" time="0">${body}</testcase>
  </testsuite>`,
    )
  }
  const all = summary.results
  const errors = summary.internalError ? 1 : 0
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="agentops-conformance" tests="${all.length + errors + verdictCases}" failures="${all.filter((r) => r.outcome === 'fail').length + verdictFailures}" errors="${errors}" skipped="${all.filter(notRun).length + verdictSkipped}" time="${totalTime(all)}">
${suites.join('\n')}
</testsuites>
`
}
