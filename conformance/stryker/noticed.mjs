/**
 * Whether a suite run's JSON report shows the suite noticing the mutant: a core failure, a profile failure (the runs
 * are --strict-profile), an error, or a selected core check that could not run (skipped or partial against a
 * reference whose clean run passes it). Shared by both runners (suite.mjs, switch-runner.mjs).
 */
export function noticed(report) {
  const v = report.verdict
  if (!v || v.verdict === 'NOT CONFORMANT' || v.verdict === 'ERROR') return true
  return coreCouldNotRun(report)
}

/** Whether a selected core check could not run, or only partly ran, in the run the report is of. */
export function coreCouldNotRun(report) {
  const core = report.verdict?.core
  return (core?.skipped?.length ?? 0) > 0 || (core?.partial?.length ?? 0) > 0
}

/** What killed it, in a line: the failed checks (core first), or the verdict's reason. */
export function killers(report) {
  const failed = (report.results ?? []).filter((r) => r.outcome === 'fail')
  failed.sort((a, b) => (a.level === b.level ? 0 : a.level === 'core' ? -1 : 1))
  if (failed.length > 0) return failed.map((r) => `${r.level} ${r.id}`).join(', ')
  return report.internalError ?? report.verdict?.line ?? 'the suite noticed it'
}

/**
 * Why a run says nothing of the mutant, when the fault was the harness's: its webhook receiver could not listen on
 * the worker's port (conformance/src/cli.ts words it so). Such a run is no kill; undefined otherwise.
 */
export function harnessFault(report) {
  const error = report?.internalError ?? ''
  return error.includes('the webhook receiver cannot listen on') ? error : undefined
}
