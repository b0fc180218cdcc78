import type { Config } from '../../src/config.js'
import type { Resolve } from '../../src/outbound/guard.js'
import { NO_PRIVATE_TARGETS, type PrivateTargets } from '../../src/outbound/private-targets.js'

/**
 * Tests' receivers listen on loopback at a port picked when they start, often after the server: every loopback
 * port is a target here. Production lists exact host:port pairs (AGENTOPS_*_PRIVATE_TARGETS).
 */
export const ANY_LOOPBACK_PORT: PrivateTargets = {
  allows: (host) => host === '127.0.0.1' || host === '::1' || host === 'localhost',
}

/** Every purpose may call loopback receivers (the test server's default). */
export const LOOPBACK_TARGETS: Config['privateTargets'] = {
  webhooks: ANY_LOOPBACK_PORT,
  destinations: ANY_LOOPBACK_PORT,
  tools: ANY_LOOPBACK_PORT,
}

/** No purpose may call a private address (a production server's default). */
export const NO_TARGETS: Config['privateTargets'] = {
  webhooks: NO_PRIVATE_TARGETS,
  destinations: NO_PRIVATE_TARGETS,
  tools: NO_PRIVATE_TARGETS,
}

/**
 * The test servers' resolver: `localhost` is loopback, and every other name is not found, without asking DNS. A test
 * that subscribes a public-looking URL (https://example.com/...) then sees a failed attempt, and never a query or a
 * call leaving the machine.
 */
export const LOOPBACK_ONLY_RESOLVE: Resolve = async (hostname) => {
  if (hostname === 'localhost') return [{ address: '127.0.0.1', family: 4 }]
  const err: NodeJS.ErrnoException = new Error(
    `getaddrinfo ENOTFOUND ${hostname} (tests resolve localhost only)`,
  )
  err.code = 'ENOTFOUND'
  throw err
}
