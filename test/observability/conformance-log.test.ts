/**
 * The whole conformance suite against the reference server on PostgreSQL when the tests have one (CI requires it;
 * the `--reference` runs elsewhere use SQLite, so the second store is held to every check, core and profile), with
 * the server logging at its most verbose level: the log has a line for every request and none of the secrets the
 * run handled (API tokens, webhook secrets, signatures, Authorization headers). One run for both promises: the log
 * is written by the surface layer, the same on either store. Without PostgreSQL the run uses SQLite.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

const SECRETS: [string, RegExp][] = [
  ['an API token', /aok_[0-9a-z]{26}_[A-Za-z0-9_-]{43}/],
  ['a webhook secret', /whsec_/],
  ['a body signature (t=...,v1=<hex>)', /v1=[0-9a-f]{64}/],
  ['a Standard Webhooks signature (v1,<base64>)', /v1,[A-Za-z0-9+/]{43}=/],
  ['an Authorization header', /authorization|bearer /i],
]

const store = backends().at(-1)!

describe(`a full conformance run on ${store.name}`, () => {
  it('passes every check, core and profile, and its server log has a line per request and no secret', async () => {
    const logFile = join(mkdtempSync(join(tmpdir(), 'agentops-conformance-log-')), 'server.log')
    const url = store.name === 'postgres' ? await store.freshUrl() : undefined
    const child = spawn(
      process.execPath,
      ['bin/agentops-conformance.mjs', '--reference', '--strict-profile'],
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
    expect(code, output.slice(-4000)).toBe(0)
    expect(output).toMatch(/core: +\d+ passed, 0 failed/)

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
