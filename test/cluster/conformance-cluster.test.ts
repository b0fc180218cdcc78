/**
 * The whole conformance suite (core and profile) against two replicas on one PostgreSQL database behind a
 * round-robin balancer that alternates HTTP requests and WebSocket connections: several replicas must behave as
 * one service (idempotency, rate limits, stream fan-out, webhooks, run execution). The `--reference` runs elsewhere
 * use SQLite, so this run is also where the second store is held to every check.
 *
 * The replicas log at their most verbose level: the same run shows that the log has a line for every request and
 * none of the secrets the run handled (API tokens, webhook secrets, signatures, Authorization headers), the log being
 * written by the surface layer, the same on either store. And its JSON report holds the contract coverage, so a
 * change that stops producing a documented answer fails here.
 */
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ContractCoverage } from '../../conformance/src/coverage.js'
import { REFERENCE_REPLAY_WINDOW, REFERENCE_SUITE_SETTINGS } from '../../conformance/src/reference.js'
import { backends } from '../support/backends.js'
import { type Cluster, conformanceProvisionCommand, startCluster } from '../support/cluster.js'
import { checksNotPassed, coverageLosses, secretsIn } from '../support/conformance-report.js'
import { testPort } from '../support/ports.js'
import { testTempDir } from '../support/temp.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const postgres = backends().filter((b) => b.name === 'postgres')

describe.skipIf(postgres.length === 0)('the conformance suite against a two-replica cluster', () => {
  let cluster: Cluster
  let provision: string
  let receiverPort = 0
  /** Every line either replica printed, whole. */
  const logLines: string[] = []

  beforeAll(async () => {
    const url = await postgres[0]!.freshUrl()
    // The suite runs it before its checks: all eight identities in one step.
    provision = conformanceProvisionCommand(url)
    // The suite's webhook receiver listens on this port, the replicas' one private webhook target.
    receiverPort = await testPort()
    cluster = await startCluster({
      databaseUrl: url,
      replicas: 2,
      env: {
        AGENTOPS_WEBHOOK_PRIVATE_TARGETS: `127.0.0.1:${receiverPort}`,
        AGENTOPS_DESTINATION_PRIVATE_TARGETS: `127.0.0.1:${receiverPort}`,
        AGENTOPS_TOOL_PRIVATE_TARGETS: `127.0.0.1:${receiverPort}`,
        // As `--reference` runs the server: a heartbeat every second (at the default 15 s the idle connection's
        // second beat of stream.protocol-messages came just as the suite's 15 s wait for it ended, and under load
        // after it) and a small replay window, declared to the suite below, so a resume past it is answered `gap`.
        // Not its quick retries (0.5 s, 1 s...): through the balancer on a loaded machine the suite's 200 ms polls of
        // the delivery log saw too few of the first waits for webhooks.retry-gaps-grow to judge them (a CI failed so).
        AGENTOPS_STREAM_HEARTBEAT_MS: REFERENCE_SUITE_SETTINGS.AGENTOPS_STREAM_HEARTBEAT_MS,
        AGENTOPS_STREAM_MAX_REPLAY: REFERENCE_SUITE_SETTINGS.AGENTOPS_STREAM_MAX_REPLAY,
        AGENTOPS_LOG_LEVEL: 'trace',
      },
      onLine: (line) => logLines.push(line.slice(line.indexOf(' ') + 1)),
    })
  })

  afterAll(async () => {
    await cluster?.stop()
  })

  it('passes every check, core and profile, through the balancer', async () => {
    const dir = testTempDir('agentops-cluster-report-')
    const reportFile = join(dir, 'conformance.json')
    const configFile = join(dir, 'config.json')
    writeFileSync(
      configFile,
      JSON.stringify({
        stream: { replayWindow: REFERENCE_REPLAY_WINDOW },
      }),
    )
    const child = spawn(
      process.execPath,
      [
        'bin/agentops-conformance.mjs',
        '--base-url',
        cluster.url,
        '--graphql-url',
        `${cluster.url}/v1/graphql`,
        '--config',
        configFile,
        '--strict-profile',
        '--json',
        reportFile,
        '--receiver-port',
        String(receiverPort),
        '--provision',
        provision,
      ],
      { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let output = ''
    child.stdout.on('data', (d) => {
      output += d
    })
    child.stderr.on('data', (d) => {
      output += d
    })
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
    const replicaLogs = cluster.replicas.map((r) => `--- replica ${r.index}\n${r.output().slice(-3000)}`)
    // Each check that did not pass, with its reason, from the JSON report: last, next to the assertion.
    expect(
      code,
      `${output.slice(-5000)}\n${replicaLogs.join('\n')}\n--- checks that did not pass\n${checksNotPassed(reportFile)}\n`,
    ).toBe(0)
    expect(output).toMatch(/core: +\d+ passed, 0 failed/)
    // What the checks made is removed at the end, through either replica.
    expect(output).not.toMatch(/cleanup: \d+ of \d+ steps failed/)
    // The balancer really spread the suite's traffic: both replicas served HTTP requests and stream connections.
    for (const kind of ['http', 'ws'] as const) {
      const served = new Set(cluster.balancer.picks.filter((p) => p.kind === kind).map((p) => p.replica))
      expect(served, kind).toEqual(new Set([0, 1]))
    }

    // Coverage of the contract: the run produced everything the README claims (responses 205/205, event kinds
    // 17/17, trace levels 2/2, frame kinds 13/13, stream messages 13/13, error paths 8/8, lifecycle 4/4).
    const coverage = (JSON.parse(readFileSync(reportFile, 'utf8')) as { coverage: ContractCoverage }).coverage
    expect(coverageLosses(coverage)).toEqual([])
    expect(coverage.responses.reachable).toBeGreaterThanOrEqual(205)
    expect(coverage.events.documented.length).toBeGreaterThanOrEqual(17)

    // The replicas' log: a line per request, no secret.
    const requests = logLines
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request')
    expect(requests.length).toBeGreaterThan(200)
    expect(requests.some((r) => r.route === '/v1/webhooks' && r.method === 'POST')).toBe(true)
    expect(secretsIn(logLines.join('\n'))).toEqual([])
  }, 240_000)
})
