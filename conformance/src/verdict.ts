/**
 * The one line a run ends with, and its exit code. A green CI job must mean "conformant": a run in which a core
 * check was skipped (a token or a declaration was not given) or left out (--only/--skip) proves less, so it is
 * INCOMPLETE (exit 3) unless the caller says it skips knowingly (--allow-incomplete).
 */
import type { CheckResult, RunSummary } from './types.js'

export type VerdictName = 'CONFORMANT' | 'NOT CONFORMANT' | 'INCOMPLETE' | 'ERROR'

export interface Verdict {
  verdict: VerdictName
  /** 0 conformant (or incomplete with --allow-incomplete), 1 not conformant or internal error, 3 incomplete. */
  exitCode: 0 | 1 | 2 | 3
  /** The last line of every run: the verdict and why, in one sentence. */
  line: string
  core: {
    /** Every core check of the suite: passed + failed + skipped + notApplicable + notSelected (one total everywhere). */
    total: number
    passed: number
    /** Core checks about an optional surface the deployment does not declare: they cannot run, and are not missing. */
    notApplicable: number
    failed: string[]
    skipped: string[]
    /** Core checks that ran but a part of which could not run (their messages say which part and what would run it). */
    partial: string[]
    /** Core checks the run left out with --only/--skip. */
    notSelected: string[]
  }
  /** Profile failures that count because of --strict-profile. */
  strictProfileFailures: string[]
  /** The settings (flags) that would run the skipped (or partial) core checks, as their reasons name them. */
  needs: string[]
  allowIncomplete: boolean
}

export interface VerdictOptions {
  strictProfile: boolean
  allowIncomplete: boolean
}

/**
 * The settings a skip (or partial) reason names: `--flag`s ("no second-workspace token (--second-token /
 * AGENTOPS_…) given") and config-file keys written "KEY in --config" ("list … in notServed in --config").
 */
export function settingsNamed(reason: string): string[] {
  const keys = [...reason.matchAll(/\b([a-zA-Z][\w.]*) in --config\b/g)].map((m) => `${m[1]} in --config`)
  const flags = reason.replace(/\b[a-zA-Z][\w.]* in --config\b/g, '').match(/--[a-z][a-z0-9-]*/g) ?? []
  return [...new Set([...flags, ...keys])]
}

export function verdictFor(summary: RunSummary, options: VerdictOptions): Verdict {
  const core = summary.results.filter((r) => r.level === 'core')
  const ids = (rs: CheckResult[]) => rs.map((r) => r.id)
  const failed = ids(core.filter((r) => r.outcome === 'fail'))
  // A check of an optional surface the deployment does not declare cannot run against it: not missing.
  const skippedResults = core.filter((r) => r.outcome === 'skip' && !r.notApplicable)
  const partialResults = core.filter((r) => r.outcome === 'partial')
  const notSelected = summary.notSelected ?? []
  const strictProfileFailures = options.strictProfile
    ? ids(summary.results.filter((r) => r.level === 'profile' && r.outcome === 'fail'))
    : []
  const incomplete = [...skippedResults, ...partialResults]
  const needs = [...new Set(incomplete.flatMap((r) => settingsNamed(r.message ?? '')))]
  // A skip whose reason names no flag still needs something: its check id says what.
  const unnamed = incomplete.filter((r) => settingsNamed(r.message ?? '').length === 0).map((r) => r.id)
  const applicable = core.filter((r) => !r.notApplicable)
  const base = {
    core: {
      total: core.length + notSelected.length,
      passed: core.filter((r) => r.outcome === 'pass').length,
      notApplicable: core.length - applicable.length,
      failed,
      skipped: ids(skippedResults),
      partial: ids(partialResults),
      notSelected,
    },
    strictProfileFailures,
    needs,
    allowIncomplete: options.allowIncomplete,
  }
  if (summary.internalError) {
    const config = summary.internalError.startsWith('configuration error')
    return {
      ...base,
      verdict: 'ERROR',
      exitCode: config ? 2 : 1,
      line: `ERROR: the run did not complete (${summary.internalError}); no verdict`,
    }
  }
  if (failed.length > 0 || strictProfileFailures.length > 0) {
    const parts = [
      ...(failed.length > 0
        ? [`${failed.length} of ${base.core.total} core checks failed: ${failed.join(', ')}`]
        : []),
      ...(strictProfileFailures.length > 0
        ? [
            `${strictProfileFailures.length} profile checks failed (--strict-profile): ${strictProfileFailures.join(', ')}`,
          ]
        : []),
    ]
    return { ...base, verdict: 'NOT CONFORMANT', exitCode: 1, line: `NOT CONFORMANT: ${parts.join('; ')}` }
  }
  const missing = incomplete.length + notSelected.length
  if (missing > 0) {
    const counted = [
      ...(skippedResults.length > 0 ? [`${skippedResults.length} skipped`] : []),
      ...(partialResults.length > 0
        ? [`${partialResults.length} only partly ran (${ids(partialResults).join(', ')})`]
        : []),
    ]
    const why = [
      ...(incomplete.length > 0
        ? [
            `${counted.join(' and ')}${needs.length > 0 ? ` (they need ${needs.join(', ')})` : ''}${unnamed.length > 0 ? `${needs.length > 0 ? ' and' : ''} (see ${unnamed.join(', ')})` : ''}`,
          ]
        : []),
      ...(notSelected.length > 0 ? [`${notSelected.length} left out by --only/--skip`] : []),
    ]
    return {
      ...base,
      verdict: 'INCOMPLETE',
      exitCode: options.allowIncomplete ? 0 : 3,
      line: `INCOMPLETE: no core check failed, but ${missing} of ${base.core.total} core checks did not ${partialResults.length > 0 ? 'fully ' : ''}run: ${why.join('; ')}${options.allowIncomplete ? ' (accepted with --allow-incomplete)' : '; --allow-incomplete accepts this'}`,
    }
  }
  return {
    ...base,
    verdict: 'CONFORMANT',
    exitCode: 0,
    line:
      base.core.notApplicable > 0
        ? `CONFORMANT: all ${applicable.length} core checks that apply ran and passed (the other ${base.core.notApplicable} of the ${base.core.total} concern optional surfaces the deployment does not declare)`
        : `CONFORMANT: all ${base.core.total} core checks ran and passed`,
  }
}
