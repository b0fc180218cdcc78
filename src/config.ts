import type { Resolve } from './outbound/guard.js'
import {
  type OutboundPurpose,
  PRIVATE_TARGETS_SETTING,
  type PrivateTargets,
  parsePrivateTargets,
} from './outbound/private-targets.js'

/** Every operator setting, read once from the environment; the one home of their defaults (`loadConfig`). */
export interface Config {
  port: number
  host: string
  databaseUrl: string
  /** Largest accepted request body (spec gap §8). */
  maxBodyBytes: number
  /**
   * Per outbound purpose, the private host:port pairs it may call anyway (a local webhook receiver); none by
   * default. Link-local and cloud metadata addresses are never reachable.
   */
  privateTargets: Record<OutboundPurpose, PrivateTargets>
  /**
   * How every outbound call resolves a host name before the guard checks its addresses: the system resolver unless
   * set (a test server keeps it to loopback, so no test ever resolves another name).
   */
  outboundResolve?: Resolve
  /**
   * How long a client may take to send a request's headers (Node's headersTimeout): a connection that trickles them
   * (slowloris) is answered 408 and closed at this bound.
   */
  headersTimeoutMs: number
  /** How long a client may take to send a whole request, headers and body (Node's requestTimeout); 408 then. */
  requestTimeoutMs: number
  /**
   * The server's public base URL (AGENTOPS_PUBLIC_URL), as people reach it: chat messages and incidents link to the
   * run there. Unset: no links.
   */
  publicUrl?: string
  /** Runs executed at the same time by one server. */
  runConcurrency: number
  /** How long a server holds a run without renewing its claim; after a crash another start takes over then. */
  runLeaseMs: number
  /** Origins allowed to call the API from a browser (CORS); empty turns CORS off. `*` allows any origin. */
  corsOrigins?: string[]
  /** Start background workers (scheduler, outbox, purges). Off for the CLI's short-lived store access. */
  workers: boolean
  /** Webhook per-attempt time-out in ms. */
  webhookTimeoutMs: number
  /** Webhook retry backoff base in ms (doubling, full jitter). */
  webhookRetryBaseMs: number
  /** Webhook attempts in all before a delivery is marked failed. */
  webhookMaxAttempts: number
  /** Outbox attempts in flight at once per server and channel (webhooks, destinations): the global pool. */
  webhookConcurrency: number
  /** How often the webhook outbox looks for due retries, in ms. */
  webhookPollMs: number
  /**
   * How often the run scheduler looks for claimable runs without a wake-up, in ms: a run another server let lapse,
   * a wake-up lost (at least 1).
   */
  runPollMs: number
  /** How often a run's SSE trace reads the run again without a wake-up (changes made by another server), in ms. */
  tracePollMs: number
  /** Stream heartbeat period in ms (ping frame + `heartbeat` message). */
  streamHeartbeatMs: number
  /** Most messages a stream resume replays per topic; older ones are announced with a `gap` message. */
  streamMaxReplay: number
  /** Topics one stream connection may be subscribed to at once (quota `stream_subscriptions_per_socket`). */
  streamMaxSubscriptions: number
  /** Stream send-buffer bound in bytes before a slow consumer is closed with 4008. */
  streamMaxBufferedBytes: number
  /**
   * Stream subscriptions read again this often without a wake-up, bounding the delay a lost cross-replica
   * notification can cause (0: never).
   */
  streamFallbackPollMs: number
  /**
   * The keys of open sockets are read again this often (an expiry, a revoke nobody announced: the CLI on SQLite);
   * an announced revoke closes them at once whatever this is.
   */
  keyWatchPollMs: number
  /**
   * On SIGTERM/SIGINT, how long the server keeps accepting and answering (each answer with `Connection: close`) after
   * `/readyz` turned 503 and before it stops listening: the time a balancer needs to see the 503 and stop sending.
   */
  shutdownDrainMs: number
  /** On SIGTERM/SIGINT, how long requests in progress may take to finish before their connections are cut. */
  shutdownGraceMs: number
  /** Prometheus metrics (`GET /metrics`) and the instrumentation behind them; default on. */
  metrics: boolean
  /** When set, `/metrics` answers only requests with `Authorization: Bearer <this>`. */
  metricsToken?: string
  /** Serve `/metrics` (and `/readyz`) on this port instead of the API's; unset serves them on the API port. */
  metricsPort?: number
  /** pino level: fatal, error, warn, info (default: one line per request), debug, trace, or silent. */
  logLevel: LogLevel
  /** Human-readable log lines (pino-pretty) instead of JSON; default: when stdout is a terminal. */
  logPretty?: boolean
  /**
   * The secret page cursors are signed with (AGENTOPS_CURSOR_SECRET); unset: one generated once and kept in the
   * store, so every replica shares it. Rotation: set the new one here and the old one as cursorSecretPrevious.
   */
  cursorSecret?: string
  /** A rotated-out cursor secret still accepted (AGENTOPS_CURSOR_SECRET_PREVIOUS). */
  cursorSecretPrevious?: string
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

function logLevelFrom(value: string | undefined): LogLevel {
  if (value === undefined || value === '') return 'info'
  const level = LOG_LEVELS.find((l) => l === value.toLowerCase())
  if (!level) throw new Error(`AGENTOPS_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${value}"`)
  return level
}

function switchFrom(value: string | undefined, fallback: boolean, name: string): boolean {
  if (value === undefined || value === '') return fallback
  if (/^(1|true|on|yes)$/i.test(value)) return true
  if (/^(0|false|off|no)$/i.test(value)) return false
  throw new Error(`${name} must be on or off, got "${value}"`)
}

/** Shorter cursor secrets are refused at start: the cursor MAC is only as strong as its key. */
export const MIN_CURSOR_SECRET_CHARS = 32

function secretFrom(value: string | undefined, name: string): string | undefined {
  if (value === undefined || value === '') return undefined
  if (value.length < MIN_CURSOR_SECRET_CHARS) {
    throw new Error(
      `${name} must be at least ${MIN_CURSOR_SECRET_CHARS} characters (e.g. openssl rand -base64 32)`,
    )
  }
  return value
}

export const DEFAULT_DATABASE_URL = 'sqlite:./.agentops/agentops.db'

function intFrom(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n < 0)
    throw new Error(`${name} must be a non-negative integer, got "${value}"`)
  return n
}

/**
 * `AGENTOPS_KEY_WATCH_POLL_MS`: at least 1. The watch's read of open sockets' keys is what closes them on an expiry
 * or a revoke nobody announced (the CLI on SQLite); 0 would leave such a socket open for good.
 */
function keyWatchPollFrom(value: string | undefined): number {
  const ms = intFrom(value, 500, 'AGENTOPS_KEY_WATCH_POLL_MS')
  if (ms < 1) throw new Error(`AGENTOPS_KEY_WATCH_POLL_MS must be at least 1, got "${value}"`)
  return ms
}

/** Parses `AGENTOPS_CORS_ORIGINS`: a comma-separated list of `scheme://host[:port]` origins, or `*`. */
export function parseCorsOrigins(value: string | undefined): string[] {
  if (value === undefined || value.trim() === '') return []
  return value.split(',').map((raw) => {
    const origin = raw.trim()
    if (origin === '*') return origin
    let url: URL
    try {
      url = new URL(origin)
    } catch {
      throw new Error(`AGENTOPS_CORS_ORIGINS: "${origin}" is not an origin (scheme://host[:port])`)
    }
    if (!/^https?:$/.test(url.protocol) || url.origin !== origin.replace(/\/$/, '')) {
      throw new Error(`AGENTOPS_CORS_ORIGINS: "${origin}" is not an origin (scheme://host[:port], no path)`)
    }
    return url.origin
  })
}

/**
 * The private targets of each purpose (AGENTOPS_WEBHOOK_PRIVATE_TARGETS, AGENTOPS_DESTINATION_PRIVATE_TARGETS,
 * AGENTOPS_TOOL_PRIVATE_TARGETS). The all-or-nothing AGENTOPS_ALLOW_PRIVATE_WEBHOOKS it replaces opened every
 * private address to `http` tools too, so a server started with it on refuses to start and says what to set.
 */
function privateTargetsFrom(env: NodeJS.ProcessEnv): Record<OutboundPurpose, PrivateTargets> {
  const old = env.AGENTOPS_ALLOW_PRIVATE_WEBHOOKS
  if (old !== undefined && old !== '' && !/^(0|false|off|no)$/i.test(old))
    throw new Error(
      'AGENTOPS_ALLOW_PRIVATE_WEBHOOKS is replaced by exact allow-lists: list the receivers as host:port pairs ' +
        'in AGENTOPS_WEBHOOK_PRIVATE_TARGETS (e.g. 127.0.0.1:8765), AGENTOPS_DESTINATION_PRIVATE_TARGETS or ' +
        'AGENTOPS_TOOL_PRIVATE_TARGETS, and unset AGENTOPS_ALLOW_PRIVATE_WEBHOOKS',
    )
  const read = (purpose: OutboundPurpose) =>
    parsePrivateTargets(env[PRIVATE_TARGETS_SETTING[purpose]], PRIVATE_TARGETS_SETTING[purpose])
  return { webhooks: read('webhooks'), destinations: read('destinations'), tools: read('tools') }
}

/** `AGENTOPS_PUBLIC_URL`: an absolute http(s) URL, kept without a trailing slash. */
export function parsePublicUrl(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === '') return undefined
  let url: URL
  try {
    url = new URL(value.trim())
  } catch {
    throw new Error(`AGENTOPS_PUBLIC_URL must be an absolute http or https URL, got "${value}"`)
  }
  if (!/^https?:$/.test(url.protocol) || url.username !== '' || url.password !== '' || url.search !== '')
    throw new Error(
      `AGENTOPS_PUBLIC_URL must be an http or https URL without credentials or query, got "${value}"`,
    )
  return url.href.replace(/\/+$/, '')
}

/** The slowloris bounds: both at least 1 s, and the headers' no longer than the whole request's. */
function requestTimeoutsFrom(env: NodeJS.ProcessEnv): { headersTimeoutMs: number; requestTimeoutMs: number } {
  const headersTimeoutMs = intFrom(env.AGENTOPS_HEADERS_TIMEOUT_MS, 10_000, 'AGENTOPS_HEADERS_TIMEOUT_MS')
  const requestTimeoutMs = intFrom(env.AGENTOPS_REQUEST_TIMEOUT_MS, 30_000, 'AGENTOPS_REQUEST_TIMEOUT_MS')
  if (headersTimeoutMs < 1000 || requestTimeoutMs < 1000)
    throw new Error('AGENTOPS_HEADERS_TIMEOUT_MS and AGENTOPS_REQUEST_TIMEOUT_MS must be at least 1000')
  if (headersTimeoutMs > requestTimeoutMs)
    throw new Error('AGENTOPS_HEADERS_TIMEOUT_MS must not be larger than AGENTOPS_REQUEST_TIMEOUT_MS')
  return { headersTimeoutMs, requestTimeoutMs }
}

/**
 * The outbox's pool by default (per channel: webhooks, destinations). A dispatch pass claims as many rows as the
 * pool has free slots, and every pass costs its reads, its claim and a commit, so a larger pool sends a large
 * fan-out in fewer, larger passes; attempts waiting on a slow acknowledgement (JetStream, a slow receiver) also
 * leave more slots to the others. Each target still has at most one attempt in flight (docs/performance.md,
 * 2026-11-29 evening, measures it).
 */
const OUTBOX_POOL = 64

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  return {
    port: intFrom(env.PORT, 8080, 'PORT'),
    host: env.HOST ?? '0.0.0.0',
    databaseUrl: env.AGENTOPS_DATABASE_URL || DEFAULT_DATABASE_URL,
    maxBodyBytes: intFrom(env.AGENTOPS_MAX_BODY_BYTES, 1024 * 1024, 'AGENTOPS_MAX_BODY_BYTES'),
    privateTargets: privateTargetsFrom(env),
    ...(env.AGENTOPS_PUBLIC_URL ? { publicUrl: parsePublicUrl(env.AGENTOPS_PUBLIC_URL) } : {}),
    ...requestTimeoutsFrom(env),
    runConcurrency: intFrom(env.AGENTOPS_RUN_CONCURRENCY, 4, 'AGENTOPS_RUN_CONCURRENCY'),
    runLeaseMs: intFrom(env.AGENTOPS_RUN_LEASE_MS, 15_000, 'AGENTOPS_RUN_LEASE_MS'),
    streamHeartbeatMs: intFrom(env.AGENTOPS_STREAM_HEARTBEAT_MS, 15_000, 'AGENTOPS_STREAM_HEARTBEAT_MS'),
    streamMaxReplay: intFrom(env.AGENTOPS_STREAM_MAX_REPLAY, 1000, 'AGENTOPS_STREAM_MAX_REPLAY'),
    streamMaxSubscriptions: intFrom(
      env.AGENTOPS_STREAM_MAX_SUBSCRIPTIONS,
      100,
      'AGENTOPS_STREAM_MAX_SUBSCRIPTIONS',
    ),
    streamMaxBufferedBytes: intFrom(
      env.AGENTOPS_STREAM_MAX_BUFFERED_BYTES,
      1024 * 1024,
      'AGENTOPS_STREAM_MAX_BUFFERED_BYTES',
    ),
    streamFallbackPollMs: intFrom(
      env.AGENTOPS_STREAM_FALLBACK_POLL_MS,
      2_000,
      'AGENTOPS_STREAM_FALLBACK_POLL_MS',
    ),
    keyWatchPollMs: keyWatchPollFrom(env.AGENTOPS_KEY_WATCH_POLL_MS),
    shutdownDrainMs: intFrom(env.AGENTOPS_SHUTDOWN_DRAIN_MS, 0, 'AGENTOPS_SHUTDOWN_DRAIN_MS'),
    shutdownGraceMs: intFrom(env.AGENTOPS_SHUTDOWN_GRACE_MS, 10_000, 'AGENTOPS_SHUTDOWN_GRACE_MS'),
    webhookTimeoutMs: intFrom(env.AGENTOPS_WEBHOOK_TIMEOUT_MS, 10_000, 'AGENTOPS_WEBHOOK_TIMEOUT_MS'),
    webhookRetryBaseMs: intFrom(env.AGENTOPS_WEBHOOK_RETRY_BASE_MS, 5_000, 'AGENTOPS_WEBHOOK_RETRY_BASE_MS'),
    webhookMaxAttempts: intFrom(env.AGENTOPS_WEBHOOK_MAX_ATTEMPTS, 8, 'AGENTOPS_WEBHOOK_MAX_ATTEMPTS'),
    webhookConcurrency: intFrom(
      env.AGENTOPS_WEBHOOK_CONCURRENCY,
      OUTBOX_POOL,
      'AGENTOPS_WEBHOOK_CONCURRENCY',
    ),
    webhookPollMs: intFrom(env.AGENTOPS_WEBHOOK_POLL_MS, 1_000, 'AGENTOPS_WEBHOOK_POLL_MS'),
    runPollMs: intFrom(env.AGENTOPS_RUN_POLL_MS, 250, 'AGENTOPS_RUN_POLL_MS'),
    tracePollMs: intFrom(env.AGENTOPS_TRACE_POLL_MS, 1_000, 'AGENTOPS_TRACE_POLL_MS'),
    corsOrigins: parseCorsOrigins(env.AGENTOPS_CORS_ORIGINS),
    metrics: switchFrom(env.AGENTOPS_METRICS, true, 'AGENTOPS_METRICS'),
    ...(env.AGENTOPS_METRICS_TOKEN ? { metricsToken: env.AGENTOPS_METRICS_TOKEN } : {}),
    ...(env.AGENTOPS_METRICS_PORT
      ? { metricsPort: intFrom(env.AGENTOPS_METRICS_PORT, 0, 'AGENTOPS_METRICS_PORT') }
      : {}),
    logLevel: logLevelFrom(env.AGENTOPS_LOG_LEVEL),
    ...(env.AGENTOPS_LOG_PRETTY
      ? { logPretty: switchFrom(env.AGENTOPS_LOG_PRETTY, false, 'AGENTOPS_LOG_PRETTY') }
      : {}),
    cursorSecret: secretFrom(env.AGENTOPS_CURSOR_SECRET, 'AGENTOPS_CURSOR_SECRET'),
    cursorSecretPrevious: secretFrom(env.AGENTOPS_CURSOR_SECRET_PREVIOUS, 'AGENTOPS_CURSOR_SECRET_PREVIOUS'),
    workers: true,
    ...overrides,
  }
}
