/** The vocabulary shared by the runner, the checks and the report writers. */
import type { ContractCoverage } from './coverage.js'
import type { Verdict } from './verdict.js'

/** `core`: the spec text demands it. `profile`: the reference profile's own decision for a spec gap. */
export type Level = 'core' | 'profile'
/**
 * `partial`: the check ran and nothing it judged failed, but a part of it could not run (an endpoint the deployment
 * does not serve, a positive control that did not answer, a list it does not offer); `message` says which part and
 * the setting that would run it. A core check that is only partial makes the verdict INCOMPLETE, never CONFORMANT.
 */
export type Outcome = 'pass' | 'fail' | 'skip' | 'partial'

/** One HTTP (or WebSocket) exchange as the report shows it; bodies are kept whole here and trimmed when printed. */
export interface Exchange {
  method: string
  url: string
  requestHeaders: Record<string, string>
  /** sha256 prefix of the bearer token sent, so observers can tell identities apart without keeping tokens. */
  tokenFingerprint?: string
  requestBody?: string
  status?: number
  responseHeaders?: Record<string, string>
  responseBody?: string
  durationMs: number
  error?: string
}

export interface CheckResult {
  id: string
  title: string
  level: Level
  family: string
  /** The numbered spec statements the check verifies (`S5.2`). */
  clauses: string[]
  outcome: Outcome
  message?: string
  /**
   * A profile check that holds the reference's choice where the spec is silent: the spec's gap it fills (gaps.ts).
   * A profile check without it checks a spec sentence (its clauses).
   */
  gap?: string
  /** The one setting (or the deployment, at its spec statements) that addresses a failure or a skip (src/fix.ts). */
  fix?: string
  /** A skip because the deployment does not declare the optional surface the check is about (not counted as missing). */
  notApplicable?: boolean
  /** The exchanges closest to the failure (the last few the check made). */
  exchanges: Exchange[]
  durationMs: number
}

export interface RunSummary {
  startedAt: string
  finishedAt: string
  baseUrl: string
  seed: number
  requestsUsed: number
  results: CheckResult[]
  traceability?: { statements: number; covered: number }
  /** Total time spent waiting because the deployment's rate-limit headers asked for it, ms. */
  pacedMs?: number
  /** An error of the suite itself (or of its setup) that ended the run early; the reports still get written. */
  internalError?: string
  /** Core checks that --only/--skip left out of the run (they did not run, so the verdict cannot be CONFORMANT). */
  notSelected?: string[]
  /** The run's verdict (set once the run is over; every report leads with it). */
  verdict?: Verdict
  /** What of the contract the run's traffic exercised (operations × documented responses, events, error paths). */
  coverage?: ContractCoverage
}

/** A check fails by throwing this (or anything else); the message is what the report shows. */
export class CheckFailure extends Error {
  override name = 'CheckFailure'
}

/** A check that cannot run against this deployment (a token or hint is missing) throws this. */
export class CheckSkipped extends Error {
  override name = 'CheckSkipped'
}

/**
 * A check of an optional surface the deployment does not declare (e.g. no GraphQL URL): skipped, and not counted
 * against the verdict, since no setting would make it run against this deployment.
 */
export class CheckNotApplicable extends CheckSkipped {
  override name = 'CheckNotApplicable'
}

/** A setting the suite needs is missing or wrong: exit code 2, never a failed check. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CheckFailure(message)
}

export function fail(message: string): never {
  throw new CheckFailure(message)
}

export function skip(reason: string): never {
  throw new CheckSkipped(reason)
}

export function notApplicable(reason: string): never {
  throw new CheckNotApplicable(reason)
}

/** Profile results in their two groups: spec sentences first, then the choices where the spec is silent. */
export function profileGroups(results: CheckResult[]): { sentences: CheckResult[]; silent: CheckResult[] } {
  const profile = results.filter((r) => r.level === 'profile')
  return { sentences: profile.filter((r) => !r.gap), silent: profile.filter((r) => r.gap) }
}

export function summarize(results: CheckResult[]): Record<Level, Record<Outcome, number>> {
  const counts: Record<Level, Record<Outcome, number>> = {
    core: { pass: 0, fail: 0, skip: 0, partial: 0 },
    profile: { pass: 0, fail: 0, skip: 0, partial: 0 },
  }
  for (const r of results) counts[r.level][r.outcome]++
  return counts
}

/** 0 when every core check passes (and every profile check with strictProfile), else 1. */
export function exitCodeFor(results: CheckResult[], strictProfile: boolean): 0 | 1 {
  const failed = results.some((r) => r.outcome === 'fail' && (r.level === 'core' || strictProfile))
  return failed ? 1 : 0
}
