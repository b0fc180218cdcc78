import type { Client } from '../generated/client/index.js'
import { TERMINAL_RUN_STATUSES } from '../generated/contract.gen.js'
import type { AgentOpsApi } from '../generated/sdk.gen.js'
import type { Run, RunStatus, TraceFrame } from '../generated/types.gen.js'
import { AgentOpsError } from './errors.js'

export type TerminalRunStatus = (typeof TERMINAL_RUN_STATUSES)[number]

/** Whether a run has reached a status it never leaves (the contract's `x-run-state-machine.terminal`). */
export function isTerminal(status: RunStatus): status is TerminalRunStatus {
  return (TERMINAL_RUN_STATUSES as readonly string[]).includes(status)
}

export interface WaitOptions {
  /** Poll period in ms; default 500. */
  intervalMs?: number
  /** Give up after this many ms with a `TimeoutError`; default 5 minutes. */
  timeoutMs?: number
  signal?: AbortSignal
  /** Called with every inspected state (progress display, logging). */
  onPoll?: (run: Run) => void
}

/** Polls a run until it is terminal and returns it; throws a `TimeoutError` DOMException after `timeoutMs`. */
export async function waitForRun(api: AgentOpsApi, runId: string, options: WaitOptions = {}): Promise<Run> {
  const interval = options.intervalMs ?? 500
  const deadline = Date.now() + (options.timeoutMs ?? 300_000)
  for (;;) {
    const { data: run } = await api.getRun({ path: { run_id: runId }, signal: options.signal })
    options.onPoll?.(run)
    if (isTerminal(run.status)) return run
    if (Date.now() + interval > deadline) {
      throw new DOMException(
        `run ${runId} is still ${run.status} after ${options.timeoutMs ?? 300_000} ms`,
        'TimeoutError',
      )
    }
    await new Promise((resolve) => setTimeout(resolve, interval))
    options.signal?.throwIfAborted()
  }
}

export interface PageShape<T> {
  data: T[]
  next_cursor: string | null
}

/**
 * Every item of a cursor-paged list, fetching pages as the loop asks for them:
 * `for await (const tool of paginate((cursor) => api.listTools({ query: { cursor } })))`.
 * Stops at `next_cursor: null`, or at an empty page (a live run's trace always offers a cursor to poll from).
 */
export async function* paginate<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ data: PageShape<T> }>,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined
  for (;;) {
    const { data: page } = await fetchPage(cursor)
    yield* page.data
    if (page.next_cursor === null || page.data.length === 0) return
    cursor = page.next_cursor
  }
}

/** The trace frames written so far, in order, paging `limit` at a time (see `followTrace` for live frames). */
export function traceFrames(
  api: AgentOpsApi,
  runId: string,
  limit = 200,
): AsyncGenerator<TraceFrame, void, undefined> {
  return paginate((cursor) =>
    api.getRunTrace({ path: { run_id: runId }, query: { limit, ...(cursor ? { cursor } : {}) } }),
  )
}

export interface FollowOptions {
  /** Resume after this frame `seq` (what `frame.seq` of the last frame you saw was). */
  afterSeq?: number
  signal?: AbortSignal
  /** Reconnections after a dropped stream before giving up; default 5. */
  reconnects?: number
}

/**
 * Every frame of the trace, then live ones until the run is terminal, over the SSE operation (`streamRunTrace`).
 * A dropped connection is resumed with `Last-Event-ID`, so no frame is missed or repeated.
 */
export async function* followTrace(
  http: Client,
  runId: string,
  options: FollowOptions = {},
): AsyncGenerator<TraceFrame, void, undefined> {
  const config = http.getConfig()
  const doFetch = config.fetch ?? fetch
  let last = options.afterSeq
  let failures = 0
  for (;;) {
    const headers = new Headers({ accept: 'text/event-stream' })
    const token =
      typeof config.auth === 'function' ? await config.auth({ scheme: 'bearer', type: 'http' }) : config.auth
    if (typeof token === 'string') headers.set('authorization', `Bearer ${token}`)
    if (last !== undefined) headers.set('last-event-id', String(last))
    const url = `${config.baseUrl ?? ''}/v1/runs/${encodeURIComponent(runId)}/trace/stream`
    if (failures > 0) await new Promise((resolve) => setTimeout(resolve, 200 * failures))
    let response: Response
    try {
      response = await doFetch(
        new Request(url, { headers, ...(options.signal ? { signal: options.signal } : {}) }),
      )
    } catch (error) {
      if (options.signal?.aborted || ++failures > (options.reconnects ?? 5)) throw error
      continue
    }
    if (!response.ok || !response.body) {
      const text = await response.text()
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {}
      throw AgentOpsError.fromResponse(response, body)
    }
    let ended = false
    try {
      for await (const event of sseEvents(response.body)) {
        if (event.event === 'end') {
          ended = true
          break
        }
        if (event.event !== 'frame') continue
        const frame = JSON.parse(event.data) as TraceFrame
        last = frame.seq
        failures = 0
        yield frame
      }
    } catch (error) {
      if (options.signal?.aborted || ++failures > (options.reconnects ?? 5)) throw error
      continue
    }
    if (ended) return
    if (++failures > (options.reconnects ?? 5))
      throw new Error(`the trace stream of ${runId} kept closing early`)
  }
}

/** Server-Sent Events (the WHATWG parsing rules that matter here: `event`, `data`, `id`, comments, CRLF). */
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n')
      let split = buffer.indexOf('\n\n')
      while (split !== -1) {
        const block = buffer.slice(0, split)
        buffer = buffer.slice(split + 2)
        let event = 'message'
        const data: string[] = []
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue
          const colon = line.indexOf(':')
          const field = colon === -1 ? line : line.slice(0, colon)
          const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
          if (field === 'event') event = value
          else if (field === 'data') data.push(value)
        }
        if (data.length > 0 || event !== 'message') yield { event, data: data.join('\n') }
        split = buffer.indexOf('\n\n')
      }
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
}
