/**
 * `--reference` on another store, with the reference's log kept: AGENTOPS_CONFORMANCE_REFERENCE_DATABASE_URL runs
 * the reference on PostgreSQL when the tests have one (SQLite otherwise), AGENTOPS_CONFORMANCE_REFERENCE_LOG keeps
 * what it prints, here at its most verbose level. A few checks that hand the server tokens, altered tokens and
 * webhook secrets: the log has their requests and none of those secrets. The whole suite on PostgreSQL, with the
 * whole log judged the same way, is test/cluster/conformance-cluster.test.ts.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'
import { checksNotPassed, secretsIn } from '../support/conformance-report.js'
import { testPort } from '../support/ports.js'
import { testTempDir } from '../support/temp.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

const store = backends().at(-1)!

/** Checks that send the server every kind of secret the log must not hold. */
const CHECKS = ['auth.malformed-token-401', 'auth.bearer-forms', 'webhooks.signature-hmac']

describe(`--reference on ${store.name}, its log kept`, () => {
  it('passes, names its store, and its server log has a line per request and no secret', async () => {
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
        // The other checks are left out, so the verdict is INCOMPLETE, with exit 0 under this flag.
        '--allow-incomplete',
        '--only',
        CHECKS.join(','),
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
    const results = (
      JSON.parse(readFileSync(reportFile, 'utf8')) as { results: { id: string; outcome: string }[] }
    ).results
    for (const id of CHECKS) expect(results.find((r) => r.id === id)?.outcome, id).toBe('pass')

    const log = readFileSync(logFile, 'utf8')
    const requests = log
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request')
    expect(requests.some((r) => r.route === '/v1/webhooks' && r.method === 'POST')).toBe(true)
    expect(requests.filter((r) => r.status === 401).length).toBeGreaterThan(10)
    expect(secretsIn(log)).toEqual([])
  }, 120_000)
})
