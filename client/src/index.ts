/**
 * The typed client of the Agent Operations API: the generated SDK (every operation, typed from the contract) bound to
 * a transport that retries and adds Idempotency-Keys, plus helpers the contract implies (wait for a run, iterate a
 * list or a trace, verify a webhook, follow the stream).
 */
import { type Client, createClient, createConfig } from '../generated/client/index.js'
import { AgentOpsApi } from '../generated/sdk.gen.js'
import type { Run, TraceFrame } from '../generated/types.gen.js'
import { AgentOpsError } from './errors.js'
import {
  Agents,
  Destinations,
  graphql,
  health,
  Ingest,
  type RequestOptions,
  Runs,
  Tasks,
  Tools,
  Webhooks,
} from './resources.js'
import { type FollowOptions, followTrace, traceFrames, type WaitOptions, waitForRun } from './runs.js'
import { type RetryOptions, retryingFetch, withDeadline } from './transport.js'

export { KNOWN_ERROR_CODES, RUN_STATUSES, TERMINAL_RUN_STATUSES } from '../generated/contract.gen.js'
export { AgentOpsApi } from '../generated/sdk.gen.js'
export type * from '../generated/types.gen.js'
export { AgentOpsError, type ApiErrorCode, type ErrorDetails, isApiError, parseRetryAfter } from './errors.js'
export { List, type Page, type StopRule } from './list.js'
export {
  Agents,
  Destinations,
  Ingest,
  type ListParams,
  type ListRunsParams,
  type RequestOptions,
  Runs,
  Tasks,
  Tools,
  type TraceParams,
  Webhooks,
} from './resources.js'
export {
  type FollowOptions,
  followTrace,
  isTerminal,
  type PageShape,
  paginate,
  type TerminalRunStatus,
  traceFrames,
  type WaitOptions,
  waitForRun,
} from './runs.js'
export {
  type StreamSubscription,
  type SubscribeOptions,
  subscribeStream,
  type WebSocketLike,
} from './stream.js'
export { type RetryOptions, retryingFetch, withDeadline } from './transport.js'
export {
  canonicalJson,
  constructEvent,
  type HeadersLike,
  type VerifyWebhookOptions,
  verifyWebhookSignature,
  WebhookDeduplicator,
  type WebhookDeduplicatorOptions,
  type WebhookErrorReason,
  type WebhookEvent,
  WebhookVerificationError,
} from './webhooks.js'

export interface AgentOpsOptions {
  /** Where the API is, without `/v1` (e.g. `http://127.0.0.1:8080`). */
  baseUrl: string
  /** The API key, or a function returning it (called per request, so a key can be swapped). */
  token: string | (() => string | Promise<string>)
  /** Retry policy for 429, 5xx and network failures; `false` turns retries off. */
  retry?: RetryOptions | false
  /** The fetch to send with; default the global one. */
  fetch?: typeof fetch
  /**
   * Milliseconds a call may take, retries included, before it fails with a `TimeoutError` DOMException; default
   * 60000, `0` for none. A call's own `timeout` overrides it; a caller's `signal` still aborts sooner.
   */
  timeout?: number
}

const DEFAULT_TIMEOUT_MS = 60_000

/**
 * The client. Resources as namespaces whose methods resolve to the response body (`await ops.runs.get(id)` is the
 * Run) and whose lists page themselves (`for await (const run of ops.runs.list({ agent_id }))`):
 * `agents`, `runs`, `tools`, `tasks`, `webhooks`, `destinations`, `ingest`, plus `graphql()` and `health()`. Every call throws
 * `AgentOpsError` on a non-2xx answer and a `TimeoutError` DOMException past its `timeout`.
 *
 * Every operation of the contract is also a flat method of the generated SDK (`ops.startRun({ path, body })`),
 * resolving to `{ data, response }`, for what a namespace does not expose (response headers, the raw request).
 */
export class AgentOps extends AgentOpsApi {
  /** The configured hey-api client underneath (interceptors, config). */
  readonly http: Client
  readonly agents: Agents
  readonly runs: Runs
  readonly tools: Tools
  readonly tasks: Tasks
  readonly webhooks: Webhooks
  readonly destinations: Destinations
  readonly ingest: Ingest

  constructor(options: AgentOpsOptions) {
    const http = createClient(
      createConfig({
        baseUrl: options.baseUrl.replace(/\/$/, ''),
        auth: options.token,
        fetch: retryingFetch(options.fetch ?? globalThis.fetch, options.retry ?? {}),
        throwOnError: true,
      }),
    )
    const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS
    // The deadline is set before the transport sees the request, so it bounds the retries and their waits too.
    http.interceptors.request.use((request, opts) => withDeadline(request, timeoutOf(opts, timeout)))
    http.interceptors.error.use((error, response) =>
      response ? AgentOpsError.fromResponse(response, error) : error,
    )
    super({ client: http })
    this.http = http
    this.agents = new Agents(this)
    this.runs = new Runs(this, http)
    this.tools = new Tools(this)
    this.tasks = new Tasks(this)
    this.webhooks = new Webhooks(this)
    this.destinations = new Destinations(this)
    this.ingest = new Ingest(this)
  }

  /** One GraphQL operation over POST (`{ query, variables }`), resolving to `{ data, errors }`. */
  graphql(request: Parameters<typeof graphql>[1], options?: RequestOptions): ReturnType<typeof graphql> {
    return graphql(this, request, options)
  }

  /** The server and its store answer (`GET /healthz`). */
  health(options?: RequestOptions): ReturnType<typeof health> {
    return health(this, options)
  }

  /** Polls the run until its status is terminal (`x-run-state-machine`) and returns it. */
  waitForRun(runId: string, options?: WaitOptions): Promise<Run> {
    return waitForRun(this, runId, options)
  }

  /** The frames written so far, paged. */
  traceFrames(runId: string, limit?: number): AsyncGenerator<TraceFrame, void, undefined> {
    return traceFrames(this, runId, limit)
  }

  /** All frames, then live ones until the run is terminal (SSE, resumed on reconnect). */
  followTrace(runId: string, options?: FollowOptions): AsyncGenerator<TraceFrame, void, undefined> {
    return followTrace(this.http, runId, options)
  }
}

/** A call's own `timeout` (passed by the namespaces as `meta.timeout`), else the client's. */
function timeoutOf(opts: object, fallback: number): number {
  const meta = 'meta' in opts ? opts.meta : undefined
  if (typeof meta === 'object' && meta !== null && 'timeout' in meta && typeof meta.timeout === 'number')
    return meta.timeout
  return fallback
}

/** `new AgentOps(options)`. */
export function createAgentOps(options: AgentOpsOptions): AgentOps {
  return new AgentOps(options)
}
