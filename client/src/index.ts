/**
 * The typed client of the Agent Operations API: the generated SDK (every operation, typed from the contract) bound to
 * a transport that retries and adds Idempotency-Keys, plus helpers the contract implies (wait for a run, iterate a
 * list or a trace, verify a webhook, follow the stream).
 */
import { type Client, createClient, createConfig } from '../generated/client/index.js'
import { AgentOpsApi } from '../generated/sdk.gen.js'
import type { Run, TraceFrame } from '../generated/types.gen.js'
import { AgentOpsError } from './errors.js'
import { type FollowOptions, followTrace, traceFrames, type WaitOptions, waitForRun } from './runs.js'
import { type RetryOptions, retryingFetch } from './transport.js'

export { KNOWN_ERROR_CODES, RUN_STATUSES, TERMINAL_RUN_STATUSES } from '../generated/contract.gen.js'
export { AgentOpsApi } from '../generated/sdk.gen.js'
export type * from '../generated/types.gen.js'
export { AgentOpsError, type ApiErrorCode, type ErrorDetails, isApiError, parseRetryAfter } from './errors.js'
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
export { type RetryOptions, retryingFetch } from './transport.js'
export { canonicalJson, type VerifyWebhookOptions, verifyWebhookSignature } from './webhooks.js'

export interface AgentOpsOptions {
  /** Where the API is, without `/v1` (e.g. `http://127.0.0.1:8080`). */
  baseUrl: string
  /** The API key, or a function returning it (called per request, so a key can be swapped). */
  token: string | (() => string | Promise<string>)
  /** Retry policy for 429, 5xx and network failures; `false` turns retries off. */
  retry?: RetryOptions | false
  /** The fetch to send with; default the global one. */
  fetch?: typeof fetch
}

/**
 * Every operation of the contract as a method (`ops.startRun({ path, body })`), resolving to `{ data, response }`
 * and throwing `AgentOpsError` on any non-2xx answer, plus `waitForRun`, `traceFrames` and `followTrace`.
 */
export class AgentOps extends AgentOpsApi {
  /** The configured hey-api client underneath (interceptors, config). */
  readonly http: Client

  constructor(options: AgentOpsOptions) {
    const http = createClient(
      createConfig({
        baseUrl: options.baseUrl.replace(/\/$/, ''),
        auth: options.token,
        fetch: retryingFetch(options.fetch ?? globalThis.fetch, options.retry ?? {}),
        throwOnError: true,
      }),
    )
    http.interceptors.error.use((error, response) =>
      response ? AgentOpsError.fromResponse(response, error) : error,
    )
    super({ client: http })
    this.http = http
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

/** `new AgentOps(options)`. */
export function createAgentOps(options: AgentOpsOptions): AgentOps {
  return new AgentOps(options)
}
