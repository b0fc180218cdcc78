import { existsSync, readFileSync } from 'node:fs'
import type { ContractCoverage, Tally } from '../../conformance/src/coverage.js'
import type { CheckResult } from '../../conformance/src/types.js'

/**
 * The checks of a conformance run's JSON report that neither passed nor were skipped, each with its reason, one a
 * line: put last in an assertion's message, where a log that keeps only the end of a long output still shows them.
 */
export function checksNotPassed(reportFile: string): string {
  if (!existsSync(reportFile)) return `(no report at ${reportFile})`
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as { results: CheckResult[] }
  return report.results
    .filter((r) => r.outcome !== 'pass' && r.outcome !== 'skip')
    .map((r) => `${r.outcome} ${r.level} ${r.id}: ${r.message ?? ''}`)
    .join('\n')
}

/**
 * Operations the suite cannot reach: Slack's interaction endpoint answers only requests signed with a Slack app's
 * signing secret, which no suite run has (test/destinations/slack-interactions.test.ts covers its answers).
 */
const OUT_OF_SUITE_REACH = new Set(['/integrations/slack/{destination_id}/interactions'])

/**
 * What a full run leaves unexercised, in words: every documented response of every operation (but 500/503, which
 * no client can provoke), every event kind, trace level, frame kind, stream message, error path and lifecycle
 * interaction (conformance/README.md "Contract coverage"). Empty when nothing is lost.
 */
export function coverageLosses(c: ContractCoverage): string[] {
  const losses: string[] = []
  let unreached = 0
  for (const op of c.operations) {
    if (OUT_OF_SUITE_REACH.has(op.path)) {
      unreached += op.missing.length
      continue
    }
    if (op.missing.length > 0) losses.push(`${op.method} ${op.path} never answered ${op.missing.join(', ')}`)
  }
  if (c.responses.produced !== c.responses.reachable - unreached)
    losses.push(`responses ${c.responses.produced}/${c.responses.reachable - unreached}`)
  const tallies: Array<[string, Tally]> = [
    ['event kinds', c.events],
    ['trace levels', c.traceLevels],
    ['frame kinds', c.traceFrameKinds],
    ['stream messages sent', c.streamClientMessages],
    ['stream messages received', c.streamServerMessages],
  ]
  for (const [what, t] of tallies) {
    if (t.documented.length === 0) losses.push(`the contract lists no ${what}`)
    if (t.missing.length > 0) losses.push(`${what} never produced: ${t.missing.join(', ')}`)
  }
  for (const [path, p] of Object.entries(c.errorPaths))
    if (!p.exercised) losses.push(`error path ${path} never exercised`)
  for (const [kind, l] of Object.entries(c.lifecycle))
    if (!l.exercised) losses.push(`lifecycle ${kind} never exercised`)
  return losses
}

/** What a server's log must never hold, whatever it logs: the secrets a conformance run hands it. */
const SECRETS: [string, RegExp][] = [
  ['an API token', /aok_[0-9a-z]{26}_[A-Za-z0-9_-]{43}/],
  ['a webhook secret', /whsec_/],
  ['a body signature (t=...,v1=<hex>)', /v1=[0-9a-f]{64}/],
  ['a Standard Webhooks signature (v1,<base64>)', /v1,[A-Za-z0-9+/]{43}=/],
  ['an Authorization header', /authorization|bearer /i],
]

/** Each secret the log holds, named, with the text around it; empty when it holds none. */
export function secretsIn(log: string): string[] {
  const found: string[] = []
  for (const [what, pattern] of SECRETS) {
    const hit = pattern.exec(log)
    if (hit) found.push(`${what}: ...${log.slice(Math.max(0, hit.index - 200), hit.index + 80)}`)
  }
  return found
}
