/** The live console report: one line per check, and for failures the request and response that failed, trimmed. */
import { coverageLine } from '../coverage.js'
import { type CheckResult, type Exchange, profileGroups, type RunSummary, summarize } from '../types.js'

const MARK = { pass: 'PASS', fail: 'FAIL', skip: 'SKIP', partial: 'PART' } as const

export function trim(text: string | undefined, max = 400): string {
  if (text === undefined) return ''
  const flat = text.replace(/\s+/g, ' ')
  return flat.length > max ? `${flat.slice(0, max)}… (${flat.length} chars)` : flat
}

/** A check's whole reason and, last, the setting that addresses it: what the reports carry. */
export function reasonWithFix(r: Pick<CheckResult, 'message' | 'fix'>): string {
  return `${r.message ?? ''}${r.fix ? ` → fix: ${r.fix}` : ''}`
}

/** A reason shortened in its middle: its start says what failed, its end often what to set. */
export function trimMiddle(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ')
  if (flat.length <= max) return flat
  const tail = Math.floor(max / 3)
  return `${flat.slice(0, max - tail)} … ${flat.slice(-tail)}`
}

export function formatExchange(x: Exchange, indent = '      '): string {
  const lines = [`${indent}> ${x.method} ${x.url}`]
  if (x.requestBody) lines.push(`${indent}> ${trim(x.requestBody)}`)
  if (x.error) lines.push(`${indent}< (no response: ${x.error})`)
  else {
    const h = x.responseHeaders ?? {}
    const interesting = Object.entries(h)
      .filter(([k]) =>
        /^(content-type|ratelimit|ratelimit-policy|retry-after|x-request-id|idempotent-replayed|www-authenticate)$/i.test(
          k,
        ),
      )
      .map(([k, v]) => `${k}: ${v}`)
      .join('; ')
    lines.push(`${indent}< ${x.status} ${interesting}`)
    if (x.responseBody) lines.push(`${indent}< ${trim(x.responseBody)}`)
  }
  return lines.join('\n')
}

/**
 * One line per check; a failure adds one line saying why. The exchanges that failed are in the JSON and JUnit
 * reports, and on the console only with --verbose.
 */
export function formatResult(r: CheckResult, index: number, total: number, verbose = false): string {
  const n = String(index + 1).padStart(String(total).length)
  const level = r.level === 'core' ? 'core   ' : 'profile'
  let line = `[${n}/${total}] ${MARK[r.outcome]} ${level} ${r.id.padEnd(44)} ${String(r.durationMs).padStart(5)} ms`
  if (verbose) line += ` — ${r.title} (${r.clauses.join(', ')})`
  // The reason, shortened in its middle on the console (the reports carry it whole), and last the one setting
  // that addresses it.
  if (r.message && r.outcome !== 'pass')
    line += `\n      ${WHY[r.outcome]}: ${trimMiddle(r.message, verbose ? 4000 : 300)}`
  if (r.fix) line += `${r.message ? '' : '\n     '} → fix: ${r.fix}`
  if (verbose && r.outcome === 'fail') for (const x of r.exchanges) line += `\n${formatExchange(x)}`
  return line
}

const WHY = { pass: 'note', fail: 'why', skip: 'skipped', partial: 'not run' } as const

/** The slowest checks of a run, for the end of the console output. */
export function slowest(results: CheckResult[], n = 5): CheckResult[] {
  return [...results].sort((a, b) => b.durationMs - a.durationMs).slice(0, n)
}

export function formatSummary(summary: RunSummary, strictProfile: boolean): string {
  const c = summarize(summary.results)
  const lines = ['']
  if (summary.verdict) lines.push(`verdict: ${summary.verdict.verdict}`)
  // The same total as the verdict line: every core check, whatever became of it.
  const v = summary.verdict?.core
  const na = v?.notApplicable ?? 0
  const out = v?.notSelected.length ?? 0
  lines.push(
    `core:    ${c.core.pass} passed, ${c.core.fail} failed, ${c.core.skip - na} skipped${c.core.partial > 0 ? `, ${c.core.partial} partial` : ''}${na > 0 ? `, ${na} not applicable` : ''}${out > 0 ? `, ${out} left out` : ''} (${v?.total ?? c.core.pass + c.core.fail + c.core.skip + c.core.partial} core checks)`,
  )
  const failedCore = summary.results.filter((r) => r.outcome === 'fail' && r.level === 'core')
  if (failedCore.length > 0) lines.push(`failed core checks: ${failedCore.map((r) => r.id).join(', ')}`)
  const notRun = summary.results.filter((r) => r.outcome === 'skip' && r.level === 'core')
  if (notRun.length > 0) lines.push(`skipped core checks: ${notRun.map((r) => r.id).join(', ')}`)
  const partly = summary.results.filter((r) => r.outcome === 'partial' && r.level === 'core')
  if (partly.length > 0) lines.push(`partial core checks: ${partly.map((r) => r.id).join(', ')}`)
  // Profile results, never interleaved with core lines: those of a spec sentence first, each failure named; the
  // reference's choices where the spec is silent as one count (the reports name each, by its gap).
  const { sentences, silent } = profileGroups(summary.results)
  const count = (rs: CheckResult[], o: CheckResult['outcome']) => rs.filter((r) => r.outcome === o).length
  lines.push(
    `profile: ${c.profile.pass} passed, ${c.profile.fail} failed, ${c.profile.skip} skipped${strictProfile ? ' (strict: failures count)' : ' (reported only; --strict-profile to enforce)'}`,
    `  of a spec sentence: ${count(sentences, 'pass')} passed, ${count(sentences, 'fail')} failed, ${count(sentences, 'skip')} skipped`,
  )
  const failedSentences = sentences.filter((r) => r.outcome === 'fail')
  if (failedSentences.length > 0)
    lines.push(`  failed: ${failedSentences.map((r) => `${r.id} (${r.clauses.join(', ')})`).join(', ')}`)
  lines.push(
    `  where the spec is silent: ${count(silent, 'fail')} of ${silent.length} differ from the reference's choices (the JSON and Markdown reports name each with its gap; --verbose prints them)`,
  )
  lines.push(
    `requests: ${summary.requestsUsed}; seed: ${summary.seed} (rerun with --seed ${summary.seed})`,
    `paced: ${((summary.pacedMs ?? 0) / 1000).toFixed(1)} s spent waiting on the deployment's rate-limit headers`,
    `slowest: ${slowest(summary.results)
      .map((r) => `${r.id} ${(r.durationMs / 1000).toFixed(1)} s`)
      .join(', ')}`,
  )
  if (summary.internalError) lines.push(`INTERNAL ERROR (the run ended early): ${summary.internalError}`)
  if (summary.traceability) {
    lines.push(
      `spec coverage: ${summary.traceability.covered} of ${summary.traceability.statements} normative statements have checks (traceability.md)`,
    )
  }
  if (summary.coverage) lines.push(coverageLine(summary.coverage))
  return lines.join('\n')
}
