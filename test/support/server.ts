/**
 * A reference server on 127.0.0.1 for one test file: fresh store, optional ManualClock, and a request helper
 * that validates every response it sees against the contract.
 */

import { join } from 'node:path'
import type { Config } from '../../src/config.js'
import type { Clock } from '../../src/domain/clock.js'
import type { IssuedKey, IssueKeyInput } from '../../src/domain/keys/service.js'
import type { Logger } from '../../src/observability/logger.js'
import { type RunningServer, startServer } from '../../src/server.js'
import type { Services } from '../../src/services.js'
import type { SurfaceObserver } from '../../src/surface/observe.js'
import { assertMatchesContract } from './openapi-validator.js'
import { listenPort } from './ports.js'
import { LOOPBACK_ONLY_RESOLVE, LOOPBACK_TARGETS } from './private-targets.js'
import { testTempDir } from './temp.js'

export interface TestResponse<T = unknown> {
  status: number
  headers: Headers
  body: T
  text: string
}

export interface RequestOptions {
  token?: string | undefined
  body?: unknown
  rawBody?: string
  headers?: Record<string, string>
  /** Skip the contract check (only for requests that deliberately leave the contract, e.g. unknown routes). */
  unchecked?: boolean
}

export interface TestServer {
  baseUrl: string
  services: Services
  server: RunningServer
  createKey(input?: Partial<IssueKeyInput>): Promise<IssuedKey>
  // biome-ignore lint/suspicious/noExplicitAny: tests read response bodies freely
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<TestResponse<T>>
  close(): Promise<void>
}

export interface TestServerOptions {
  databaseUrl?: string
  clock?: Clock
  config?: Partial<Config>
  observer?: SurfaceObserver
  /** The server's log (default: the environment's level on stdout). */
  logger?: Logger
}

let workspaceCounter = 0

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const databaseUrl = options.databaseUrl ?? `sqlite:${join(testTempDir('test-'), 'agentops.db')}`
  const server = await startServer({
    config: {
      port: await listenPort(),
      host: '127.0.0.1',
      databaseUrl,
      privateTargets: LOOPBACK_TARGETS,
      outboundResolve: LOOPBACK_ONLY_RESOLVE,
      ...options.config,
    },
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  })
  const baseUrl = server.url
  return {
    baseUrl,
    services: server.services,
    server,
    createKey: (input = {}) =>
      server.services.keyAdmin.issue({
        workspace: `ws-${process.pid}-${++workspaceCounter}`,
        tier: 'pro',
        ...input,
      }),
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers }
      if (opts.token) headers.authorization = `Bearer ${opts.token}`
      let body: string | undefined
      if (opts.rawBody !== undefined) body = opts.rawBody
      else if (opts.body !== undefined) {
        body = JSON.stringify(opts.body)
        headers['content-type'] ??= 'application/json'
      }
      const res = await fetch(`${baseUrl}${path}`, { method, headers, body })
      const text = await res.text()
      let parsed: unknown = text
      if ((res.headers.get('content-type') ?? '').includes('application/json') && text)
        parsed = JSON.parse(text)
      if (!opts.unchecked)
        assertMatchesContract(method, path, res.status, res.status === 204 ? undefined : parsed)
      // biome-ignore lint/suspicious/noExplicitAny: tests read response bodies freely
      return { status: res.status, headers: res.headers, body: parsed as any, text }
    },
    close: () => server.close(),
  }
}
