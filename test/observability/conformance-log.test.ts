/**
 * The whole conformance suite against the reference server on PostgreSQL when the tests have one (CI requires it;
 * the `--reference` runs elsewhere use SQLite, so the second store is held to every check, core and profile), with
 * the server logging at its most verbose level: the log has a line for every request and none of the secrets the
 * run handled (API tokens, webhook secrets, signatures, Authorization headers). One run for both promises: the log
 * is written by the surface layer, the same on either store. Without PostgreSQL the run uses SQLite. The same run's
 * JSON report holds the contract coverage, so a change that stops producing a documented answer fails here.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import type { ContractCoverage, Tally } from '../../conformance/src/coverage.js'
import { backends } from '../support/backends.js'
import { checksNotPassed } from '../support/conformance-report.js'
import { testPort } from '../support/ports.js'
import { testTempDir } from '../support/temp.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

const SECRETS: [string, RegExp][] = [
  ['an API token', /aok_[0-9a-z]{26}_[A-Za-z0-9_-]{43}/],
  ['a webhook secret', /whsec_/],
  ['a body signature (t=...,v1=<hex>)', /v1=[0-9a-f]{64}/],
  ['a Standard Webhooks signature (v1,<base64>)', /v1,[A-Za-z0-9+/]{43}=/],
  ['an Authorization header', /authorization|bearer /i],
]

const store = backends().at(-1)!

/**
 * What a full `--reference` run leaves unexercised, in words: every documented response of every operation (but
 * 500/503, which no client can provoke), every event kind, trace level, frame kind, stream message, error path and
 * lifecycle interaction (conformance/README.md "Contract coverage"). Empty when nothing is lost.
 */
/**
 * Operations the suite cannot reach: Slack's interaction endpoint answers only requests signed with a Slack app's
 * signing secret, which no suite run has (test/destinations/slack-interactions.test.ts covers its answers).
 */
const OUT_OF_SUITE_REACH = new Set(['/integrations/slack/{destination_id}/interactions'])

function coverageLosses(c: ContractCoverage): string[] {
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

describe(`a full conformance run on ${store.name}`, () => {
  it('passes every check, core and profile, and its server log has a line per request and no secret', async () => {
    const dir = testTempDir('conformance-log-')
    const logFile = join(dir, 'server.log')
    const reportFile = join(dir, 'report.json')
    const url = store.name === 'postgres' ? await store.freshUrl() : undefined
    const child = spawn(
      process.execPath,
      [
        'bin/agentops-conformance.mjs',
        '--reference',
        '--strict-profile',
        '--json',
        reportFile,
        // The harness's ports (test/support/ports.ts): a free one, or one of AGENTOPS_TEST_PORT_BASE's range.
        '--reference-port',
        String(await testPort()),
        '--receiver-port',
        String(await testPort()),
      ],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          ...(url ? { AGENTOPS_CONFORMANCE_REFERENCE_DATABASE_URL: url } : {}),
          AGENTOPS_CONFORMANCE_REFERENCE_LOG: logFile,
          AGENTOPS_LOG_LEVEL: 'trace',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let output = ''
    child.stdout.on('data', (d) => {
      output += d
    })
    child.stderr.on('data', (d) => {
      output += d
    })
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
    if (url) expect(output).toContain(`store ${url}`)
    expect(
      code,
      `${output.slice(-4000)}\n--- checks that did not pass\n${checksNotPassed(reportFile)}\n`,
    ).toBe(0)
    expect(output).toMatch(/core: +\d+ passed, 0 failed/)

    // Coverage of the contract: the run produced everything the README claims (responses 205/205, event kinds
    // 17/17, trace levels 2/2, frame kinds 13/13, stream messages 13/13, error paths 8/8, lifecycle 4/4).
    const coverage = (JSON.parse(readFileSync(reportFile, 'utf8')) as { coverage: ContractCoverage }).coverage
    expect(coverageLosses(coverage)).toEqual([])
    expect(coverage.responses.reachable).toBeGreaterThanOrEqual(205)
    expect(coverage.events.documented.length).toBeGreaterThanOrEqual(17)

    const log = readFileSync(logFile, 'utf8')
    const lines = log.split('\n').filter((l) => l.startsWith('{'))
    const requests = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request')
    expect(requests.length).toBeGreaterThan(200)
    expect(requests.some((r) => r.route === '/v1/webhooks' && r.method === 'POST')).toBe(true)
    for (const [what, pattern] of SECRETS) {
      const hit = pattern.exec(log)
      expect(
        hit,
        `${what} in the log: ...${hit ? log.slice(Math.max(0, hit.index - 200), hit.index + 80) : ''}`,
      ).toBeNull()
    }
  }, 240_000)
})
