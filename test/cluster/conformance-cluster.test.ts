/**
 * The whole conformance suite (core and profile) against two replicas on one PostgreSQL database behind a
 * round-robin balancer that alternates HTTP requests and WebSocket connections: several replicas must behave as
 * one service (idempotency, rate limits, stream fan-out, webhooks, run execution).
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'
import { type Cluster, conformanceProvisionCommand, startCluster } from '../support/cluster.js'
import { checksNotPassed } from '../support/conformance-report.js'
import { testPort } from '../support/ports.js'
import { testTempDir } from '../support/temp.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const postgres = backends().filter((b) => b.name === 'postgres')

describe.skipIf(postgres.length === 0)('the conformance suite against a two-replica cluster', () => {
  let cluster: Cluster
  let provision: string
  let receiverPort = 0

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
        // A heartbeat every second, as `--reference` runs it: at the default 15 s the idle connection's second beat
        // of stream.protocol-messages came just as the suite's 15 s wait for it ended, and under load after it.
        AGENTOPS_STREAM_HEARTBEAT_MS: '1000',
      },
    })
  })

  afterAll(async () => {
    await cluster?.stop()
  })

  it('passes every check, core and profile, through the balancer', async () => {
    const reportFile = join(testTempDir('agentops-cluster-report-'), 'conformance.json')
    const child = spawn(
      process.execPath,
      [
        'bin/agentops-conformance.mjs',
        '--base-url',
        cluster.url,
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
    // The balancer really spread the suite's traffic: both replicas served HTTP requests and stream connections.
    for (const kind of ['http', 'ws'] as const) {
      const served = new Set(cluster.balancer.picks.filter((p) => p.kind === kind).map((p) => p.replica))
      expect(served, kind).toEqual(new Set([0, 1]))
    }
  }, 240_000)
})
