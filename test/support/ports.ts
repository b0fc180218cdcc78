/**
 * The ports the test harness listens on. By default a free one: for a server of this process the kernel's choice at
 * its bind, for a child process's server one below the kernel's ephemeral range (conformance/src/ports.ts). A CI runner whose
 * firewall opens only some ports sets AGENTOPS_TEST_PORT_BASE (the first port of the range) and, optionally,
 * AGENTOPS_TEST_PORT_COUNT (how many, default 1000): every server the harness starts (the test servers, the cluster's
 * replicas, the PostgreSQL of the global setup, the webhook receivers, the reference and receiver of the
 * `agentops-conformance --reference` runs, the conformance tests' stand-in) then takes a free port of that range.
 * Each vitest worker starts in its own slice of the range, so parallel test files rarely probe the same port.
 */
import type { Server as NetServer } from 'node:net'
import { canListen, freePort } from '../../conformance/src/ports.js'

export const PORT_BASE_VARIABLE = 'AGENTOPS_TEST_PORT_BASE'
export const PORT_COUNT_VARIABLE = 'AGENTOPS_TEST_PORT_COUNT'

/** Slices of the range, one starting point per vitest worker (VITEST_POOL_ID; the global setup has none). */
const SLICES = 32

export interface PortRange {
  base: number
  count: number
}

/** The range set in the environment, or null when the harness may take any free port. */
export function testPortRange(env: NodeJS.ProcessEnv = process.env): PortRange | null {
  const rawBase = env[PORT_BASE_VARIABLE]
  if (rawBase === undefined || rawBase === '') return null
  const base = Number(rawBase)
  if (!Number.isInteger(base) || base < 1 || base > 65535)
    throw new Error(`${PORT_BASE_VARIABLE} must be a port number (1..65535), not "${rawBase}"`)
  const rawCount = env[PORT_COUNT_VARIABLE]
  const count = rawCount === undefined || rawCount === '' ? Math.min(1000, 65536 - base) : Number(rawCount)
  if (!Number.isInteger(count) || count < 1 || base + count - 1 > 65535)
    throw new Error(
      `${PORT_COUNT_VARIABLE} must be a whole number from 1 to ${65536 - base} (the range ends at 65535), not "${rawCount}"`,
    )
  return { base, count }
}

/** Ports this process has handed out already: never handed twice, even after their server closed. */
const handed = new Set<number>()

/**
 * A port for a server of the harness: a free one of the configured range, else one below the kernel's ephemeral
 * range that the kernel cannot give to anyone else before the child process binds it (conformance/src/ports.ts);
 * a concrete number either way, for a child process's `--port`.
 */
export async function testPort(host = '127.0.0.1'): Promise<number> {
  const range = testPortRange()
  if (!range) return freePort(host)
  const slot = Number(process.env.VITEST_POOL_ID ?? 0) % SLICES
  const start = slot * Math.max(1, Math.floor(range.count / SLICES))
  for (let i = 0; i < range.count; i++) {
    const port = range.base + ((start + i) % range.count)
    if (handed.has(port)) continue
    if (await canListen(port, host)) {
      handed.add(port)
      return port
    }
  }
  throw new Error(
    `no free port left in ${range.base}..${range.base + range.count - 1} (${PORT_BASE_VARIABLE}, ${PORT_COUNT_VARIABLE}): widen the range`,
  )
}

/** The port for a server listening in this process: 0 (the kernel picks while binding) unless a range is set. */
export async function listenPort(host = '127.0.0.1'): Promise<number> {
  return testPortRange() ? testPort(host) : 0
}

/** Starts `server` listening on the host at a harness port (see listenPort); resolves with the port it took. */
export async function listenOnTestPort(server: NetServer, host = '127.0.0.1'): Promise<number> {
  const port = await listenPort(host)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('the server has no TCP port')
  return address.port
}
