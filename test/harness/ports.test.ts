/**
 * The harness's ports (test/support/ports.ts): by default the kernel's free ones; with AGENTOPS_TEST_PORT_BASE (and
 * AGENTOPS_TEST_PORT_COUNT) every server the harness starts listens in that range, as a CI runner behind a firewall
 * needs. The range is pinned here through the environment and each kind of server is seen listening in it.
 */
import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ephemeralStart, freePort } from '../../conformance/src/ports.js'
import { startBalancer } from '../support/cluster.js'
import {
  listenOnTestPort,
  PORT_BASE_VARIABLE,
  PORT_COUNT_VARIABLE,
  testPort,
  testPortRange,
} from '../support/ports.js'
import { startPostgres } from '../support/postgres.js'
import { startTestServer } from '../support/server.js'
import { startReceiver } from '../webhooks/receiver.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const COUNT = 40

const portOf = (url: string) => Number(new URL(url).port)

describe('the harness ports', () => {
  it('are the kernel’s free ones when no range is set', async () => {
    expect(testPortRange({})).toBeNull()
    const server = createServer()
    const port = await listenOnTestPort(server)
    await new Promise<void>((r) => server.close(() => r()))
    expect(port).toBeGreaterThan(0)
  })

  it('give a child process a free port below the kernel’s ephemeral range, which no listen(0) or connection takes', async () => {
    const start = ephemeralStart()
    expect(ephemeralStart(() => '40000\t60999\n')).toBe(40000)
    expect(ephemeralStart(() => 'garbage')).toBe(32768)
    expect(
      ephemeralStart(() => {
        throw new Error('no /proc')
      }),
    ).toBe(32768)
    const ports = await Promise.all(Array.from({ length: 20 }, () => testPort()))
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000)
      expect(port).toBeLessThan(start)
    }
    // Never the same one twice from one process, and free when handed out.
    expect(new Set(ports).size).toBe(ports.length)
    const server = createServer()
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(ports[0], '127.0.0.1', resolve)
    })
    await new Promise<void>((r) => server.close(() => r()))
    // With every draw landing on a port it may not give (in use, and handed out before), the kernel's choice is taken.
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(ports[1], '127.0.0.1', resolve))
    const fraction = (ports[1]! - 10_000 + 0.5) / (start - 10_000)
    const fallback = await freePort('127.0.0.1', () => fraction)
    await new Promise<void>((r) => taken.close(() => r()))
    expect(fallback).not.toBe(ports[1])
    expect(fallback).toBeGreaterThanOrEqual(start)
  })

  it('refuse a malformed range, naming the variable', () => {
    expect(() => testPortRange({ [PORT_BASE_VARIABLE]: 'eight' })).toThrow(
      /AGENTOPS_TEST_PORT_BASE must be a port/,
    )
    expect(() => testPortRange({ [PORT_BASE_VARIABLE]: '70000' })).toThrow(/AGENTOPS_TEST_PORT_BASE/)
    expect(() => testPortRange({ [PORT_BASE_VARIABLE]: '65530', [PORT_COUNT_VARIABLE]: '10' })).toThrow(
      /AGENTOPS_TEST_PORT_COUNT must be a whole number from 1 to 6 /,
    )
    expect(testPortRange({ [PORT_BASE_VARIABLE]: '20000' })).toEqual({ base: 20000, count: 1000 })
    expect(testPortRange({ [PORT_BASE_VARIABLE]: '65000' })).toEqual({ base: 65000, count: 536 })
  })
})

describe('with AGENTOPS_TEST_PORT_BASE pinned through the environment', () => {
  let base = 0
  const inRange = (port: number) => {
    expect(port).toBeGreaterThanOrEqual(base)
    expect(port).toBeLessThan(base + COUNT)
  }

  beforeAll(async () => {
    // A stretch of loopback ports, most likely free; a port of it in use is passed over, not failed on.
    base = Math.min(await testPort(), 65535 - COUNT)
    vi.stubEnv(PORT_BASE_VARIABLE, String(base))
    vi.stubEnv(PORT_COUNT_VARIABLE, String(COUNT))
  })

  afterAll(() => {
    vi.unstubAllEnvs()
  })

  it('hands out ports of the range, each once, and passes over one in use', async () => {
    const taken = createServer()
    const first = await listenOnTestPort(taken)
    inRange(first)
    const next = await testPort()
    inRange(next)
    expect(next).not.toBe(first)
    await new Promise<void>((r) => taken.close(() => r()))
  })

  it('the test server, the webhook receiver and the balancer listen in it', async () => {
    const server = await startTestServer()
    const receiver = await startReceiver()
    const balancer = await startBalancer([server.baseUrl])
    try {
      inRange(portOf(server.baseUrl))
      inRange(portOf(receiver.url))
      inRange(portOf(balancer.url))
      expect((await fetch(`${balancer.url}/healthz`)).status).toBe(200)
    } finally {
      await balancer.close()
      await receiver.close()
      await server.close()
    }
  })

  it('the PostgreSQL the setup starts listens in it', async (ctx) => {
    let pg: Awaited<ReturnType<typeof startPostgres>>
    try {
      pg = await startPostgres()
    } catch (err) {
      if (process.env.AGENTOPS_REQUIRE_POSTGRES === '1') throw err
      ctx.skip(`no PostgreSQL to start: ${(err as Error).message}`)
      return
    }
    try {
      if (pg.via === 'local-binaries') inRange(portOf(pg.url))
    } finally {
      await pg.stop()
    }
  }, 120_000)

  it('agentops-conformance --reference takes its reference and receiver ports from the environment too', async () => {
    const referencePort = await testPort()
    const receiverPort = await testPort()
    const child = spawn(
      process.execPath,
      ['bin/agentops-conformance.mjs', '--reference', '--only', 'webhooks'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          AGENTOPS_CONFORMANCE_REFERENCE_PORT: String(referencePort),
          AGENTOPS_CONFORMANCE_RECEIVER_PORT: String(receiverPort),
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
    expect(output).toContain(`serving at http://127.0.0.1:${referencePort} `)
    expect(output).toContain(`receiver http://127.0.0.1:${receiverPort}/hooks`)
    // The deliveries reached the receiver on that port.
    expect(output).toMatch(/PASS core\s+webhooks\.delivery-arrives/)
    expect(output).not.toMatch(/FAIL/)
    // --only leaves the other core checks out: INCOMPLETE, exit 3.
    expect(code, output).toBe(3)
  }, 180_000)
})
