/**
 * The SSE trace's loop (src/http/trace-sse.ts): a live stream follows its run through the run's wake-ups, and a
 * change committed while the loop is reading or writing is not lost (it once was: the stream then ended a poll, a
 * second, after its run). Timers are fake, so "at once" means before the poll interval has passed.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { TraceRead } from '../../src/domain/runs/service.js'
import type { FrameRecord } from '../../src/domain/runs/types.js'
import { type TraceRunPorts, type TraceStream, traceSource, writeTrace } from '../../src/http/trace-sse.js'

const RUN = 'run_1'

function frame(seq: number, kind: FrameRecord['kind']): FrameRecord {
  return {
    seq,
    ts: seq,
    stepId: null,
    kind,
    tool: null,
    toolId: null,
    policy: null,
    latencyMs: null,
    result: null,
    detail: null,
  }
}

/** A run whose reads answer `pages` in turn (the last one again once they run out), with its change listeners. */
function fakeRun(pages: Array<() => TraceRead>) {
  const listeners = new Set<(runId: string) => void>()
  let reads = 0
  const ports: TraceRunPorts = {
    async frames() {
      const page = pages[Math.min(reads, pages.length - 1)]!
      reads++
      return page()
    },
    onChange(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
  }
  return {
    ports,
    listeners,
    reads: () => reads,
    change: (runId = RUN) => {
      for (const l of listeners) l(runId)
    },
  }
}

function recordingStream() {
  const written: string[] = []
  let abort: (() => void) | undefined
  const stream: TraceStream = {
    async writeSSE(m) {
      written.push(`${m.event}:${m.data}`)
    },
    async write(text) {
      written.push(text)
    },
    onAbort(listener) {
      abort = listener
    },
  }
  return { stream, written, abort: () => abort?.() }
}

const live = (frames: FrameRecord[]): TraceRead => ({
  status: 'running',
  frames,
  more: false,
  nextAfter: frames.at(-1)?.seq ?? 0,
})
const ended = (frames: FrameRecord[]): TraceRead => ({
  status: 'succeeded',
  frames,
  more: false,
  nextAfter: null,
})

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

describe('the SSE trace loop', () => {
  it('reads again at once when the run changed while it was reading (the change is not lost)', async () => {
    let run: ReturnType<typeof fakeRun>
    run = fakeRun([
      () => {
        // The run's last change commits while the first read is under way.
        run.change()
        return live([frame(1, 'run.started')])
      },
      () => ended([frame(2, 'run.succeeded')]),
    ])
    const { stream, written } = recordingStream()
    let done = false
    void writeTrace(stream, traceSource(run.ports, 'ws', RUN), 0, (f) => f.kind).then(() => {
      done = true
    })
    await vi.advanceTimersByTimeAsync(999)
    expect(done).toBe(true)
    expect(written.map((w) => w.split(':')[0])).toEqual(['frame', 'frame', 'end'])
    expect(run.listeners.size).toBe(0)
  })

  it("waits for the run's next change, not for the poll, and ignores other runs' changes", async () => {
    const run = fakeRun([() => live([frame(1, 'run.started')]), () => ended([frame(2, 'run.succeeded')])])
    const { stream } = recordingStream()
    let done = false
    void writeTrace(stream, traceSource(run.ports, 'ws', RUN), 0, (f) => f.kind).then(() => {
      done = true
    })
    await vi.advanceTimersByTimeAsync(10)
    expect(run.reads()).toBe(1)
    run.change('run_other')
    await vi.advanceTimersByTimeAsync(10)
    expect(run.reads()).toBe(1)
    run.change()
    await vi.advanceTimersByTimeAsync(10)
    expect(done).toBe(true)
    expect(run.reads()).toBe(2)
  })

  it('reads again after the poll interval when no wake-up comes (a change made by another process)', async () => {
    const run = fakeRun([() => live([frame(1, 'run.started')]), () => ended([])])
    const { stream } = recordingStream()
    let done = false
    void writeTrace(stream, traceSource(run.ports, 'ws', RUN), 0, (f) => f.kind).then(() => {
      done = true
    })
    await vi.advanceTimersByTimeAsync(999)
    expect(done).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(done).toBe(true)
  })

  it('polls at the interval it is given (AGENTOPS_TRACE_POLL_MS)', async () => {
    const run = fakeRun([() => live([frame(1, 'run.started')]), () => ended([])])
    const { stream } = recordingStream()
    let done = false
    void writeTrace(stream, traceSource(run.ports, 'ws', RUN), 0, (f) => f.kind, 5000).then(() => {
      done = true
    })
    await vi.advanceTimersByTimeAsync(4999)
    expect(done).toBe(false)
    expect(run.reads()).toBe(1)
    await vi.advanceTimersByTimeAsync(1)
    expect(done).toBe(true)
  })

  it('ends at once when the client leaves, and stops listening to the run', async () => {
    const run = fakeRun([() => live([frame(1, 'run.started')])])
    const { stream, abort } = recordingStream()
    let done = false
    void writeTrace(stream, traceSource(run.ports, 'ws', RUN), 0, (f) => f.kind).then(() => {
      done = true
    })
    await vi.advanceTimersByTimeAsync(10)
    expect(run.listeners.size).toBe(1)
    abort()
    await vi.advanceTimersByTimeAsync(0)
    expect(done).toBe(true)
    expect(run.reads()).toBe(1)
    expect(run.listeners.size).toBe(0)
  })
})
