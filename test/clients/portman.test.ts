/**
 * Portman (it converts the contract to a Postman collection with contract tests and runs it with Newman) against a
 * fresh reference server on loopback, with only a bearer token, the contract's own examples and
 * test/clients/portman/portman-config.json (which creates the resources the paths need; it relaxes no check).
 * Every assertion must pass: a failure here is the contract disagreeing with the server, or its examples with
 * either. Prints the figures.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listenOnTestPort } from '../support/ports.js'
import { startTestServer, type TestServer } from '../support/server.js'

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, '../..')

interface NewmanReport {
  run: {
    stats: { requests: { total: number }; assertions: { total: number; failed: number } }
    failures: { source?: { name?: string }; error?: { test?: string; message?: string } }[]
  }
}

describe('Portman contract tests from the contract and its examples', () => {
  let t: TestServer
  let dir: string
  // The subscription's receiver: it takes every delivery at its first attempt, so a delivery that has been
  // delivered has no attempt in progress or to come, and `redeliver` finds it free (not 409 invalid_state).
  let receiver: Server
  let receiverUrl: string
  let received = 0
  beforeAll(async () => {
    t = await startTestServer()
    dir = mkdtempSync(join(tmpdir(), 'agentops-portman-'))
    receiver = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        received++
        res.writeHead(204).end()
      })
    })
    await listenOnTestPort(receiver)
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  })
  afterAll(async () => {
    await t?.close()
    await new Promise((resolve) => receiver?.close(resolve))
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('passes every assertion Portman generates', async () => {
    const { token } = await t.createKey({ scopes: ['*'] })
    const report = join(dir, 'newman.json')
    // Portman writes its collection and Newman environment under its working directory: a temporary one.
    const output = await run(
      join(ROOT, 'node_modules/.bin/portman'),
      [
        '--local',
        join(ROOT, 'openapi/agent-operations.yaml'),
        '--baseUrl',
        t.baseUrl,
        '--portmanConfigFile',
        join(import.meta.dirname, 'portman/portman-config.json'),
        '--output',
        join(dir, 'collection.json'),
        '--runNewman',
        '--newmanRunOptions',
        JSON.stringify({
          reporters: ['json'],
          reporter: { json: { export: report } },
          abortOnFailure: false,
          timeoutRequest: 30_000,
        }),
      ],
      {
        cwd: dir,
        timeout: 240_000,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, PORTMAN_BEARER_TOKEN: token, PORTMAN_WEBHOOK_URL: receiverUrl },
      },
    ).then(
      ({ stdout, stderr }) => stdout + stderr,
      // Portman exits non-zero on a failed assertion: the report below says which.
      (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? String(e)}`,
    )
    if (!existsSync(report)) throw new Error(`Portman wrote no Newman report:\n${output.slice(-4000)}`)
    const { stats, failures } = (JSON.parse(readFileSync(report, 'utf8')) as NewmanReport).run
    console.log(
      `Portman: ${stats.requests.total} requests, ${stats.assertions.total} assertions, ${stats.assertions.failed} failed`,
    )
    expect(
      failures.map((f) => `${f.source?.name}: ${f.error?.test}: ${f.error?.message?.slice(0, 300)}`),
    ).toEqual([])
    expect(stats.assertions.total).toBeGreaterThan(200)
    // The subscription pointed at the receiver (PORTMAN_WEBHOOK_URL), not at the fallback.
    expect(received).toBeGreaterThan(0)
  }, 300_000)
})
