/** Spec §4: a live run's trace stream, judged by how soon a frame reaches it (the reference profile's choice). */
import type { Check, CheckContext } from '../check.js'
import { expectStatus } from '../fixtures.js'
import type { HttpResponse } from '../http.js'
import { completeSseEvents, parseSse } from '../sse.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'

type Json = Record<string, unknown>

/** Controls judged, and how many of them may reach the stream later than PROMPT_MS. */
const SAMPLES = 8
const LATE_ALLOWED = 2
/**
 * What "promptly" means: well past a loaded machine's pause (the clean reference writes a frame to its stream in
 * milliseconds), well short of the reference's own fallback read of a run's frames (once a second). Each control is
 * sent as soon as the previous one's frame arrived, so a stream that only reads on such a period meets each new
 * frame just after a read, and delivers it most of a period late: late every time, not by chance.
 */
const PROMPT_MS = 500

/** A trace stream read as it comes: each frame with the time it arrived. */
class LiveTrace {
  private text = ''
  private readonly arrivals: { frame: Json; at: number }[] = []
  private wake: (() => void) | undefined
  private closed = false
  readonly answer: Promise<HttpResponse>

  constructor(ctx: CheckContext, runId: string) {
    this.answer = ctx.http.get(`/v1/runs/${runId}/trace/stream`, {
      headers: { accept: 'text/event-stream', 'accept-encoding': 'identity' },
      onText: (text) => this.take(text),
      // Open for the whole check (its every wait at most waitMs), not one request's time: the check's cancel ends it.
      timeoutMs: (SAMPLES + 2) * ctx.config.waitMs,
    })
    // The answer's end ends the wait of whoever is waiting for a frame that will not come.
    const ended = () => {
      this.closed = true
      this.wake?.()
    }
    void this.answer.then(ended, ended)
  }

  private take(text: string): void {
    const { events, rest } = completeSseEvents(this.text + text)
    this.text = rest
    if (events.length === 0) return
    const at = performance.now()
    for (const e of parseSse(events.join(''))) {
      if (e.event !== 'frame') continue
      try {
        this.arrivals.push({ frame: JSON.parse(e.data) as Json, at })
      } catch {
        // Not a frame: judged by runs.trace-streaming.
      }
    }
    this.wake?.()
  }

  /** The stream's answer ended (the deployment closed it, or the connection broke). */
  get ended(): boolean {
    return this.closed
  }

  get count(): number {
    return this.arrivals.length
  }

  /** The arrival of frame number `index` (from 0), or undefined once `ms` passed or the stream ended without it. */
  async frame(index: number, ms: number): Promise<{ frame: Json; at: number } | undefined> {
    const deadline = performance.now() + ms
    while (this.arrivals.length <= index && !this.closed && performance.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - performance.now())
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
    return this.arrivals[index]
  }
}

export const tracePushChecks: Check[] = [
  {
    id: 'runs.trace-pushed-promptly',
    title: `A live run's trace stream (SSE) carries each pause and resume's frame promptly: ${SAMPLES - LATE_ALLOWED} of ${SAMPLES} within ${PROMPT_MS} ms of the control's answer`,
    level: 'profile',
    clauses: ['S4.6'],
    // A run of its own, waiting for its approval: nothing else it does reaches the stream.
    overlap: true,
    async run(ctx) {
      // §4 "The trace, either as a stream of frames or as pages of frames" names no delay. The reference's choice: a
      // run's change wakes its trace streams at once; their periodic read only repairs a missed wake-up.
      const { runId } = await ctx.fx.awaitingRun()
      const live = new LiveTrace(ctx, runId)
      try {
        // The frames so far, up to the approval it waits for, come first.
        const settled = await live.frame(0, ctx.config.waitMs)
        if (!settled) {
          const res = await live.answer
          expectStatus(res, 200, 'SSE trace of a run awaiting approval')
          fail(`the SSE trace of run ${runId}, awaiting approval, carried no frame: ${short(res.text)}`)
        }
        const late: string[] = []
        const took: string[] = []
        let synced = true
        for (let i = 0; i < SAMPLES && late.length <= LATE_ALLOWED; i++) {
          const action = i % 2 === 0 ? 'pause' : 'resume'
          // Whatever the run's trace holds before this control reaches the stream first, so the next frame is
          // this control's own: a frame left over (a backlog frame, an earlier control's effect that landed late)
          // would be taken for it and shift every reading after it. A stream that never carries as many frames
          // as the pages (judged by runs.trace-streaming) is waited for once.
          if (synced) {
            const stored = (await ctx.fx.readTrace(runId)).frames.length
            synced = stored === 0 || (await live.frame(stored - 1, ctx.config.waitMs)) !== undefined
          }
          const seen = await settle(live)
          const res = await ctx.http.post(`/v1/runs/${runId}/${action}`)
          expectStatus(res, [200, 202, 204], `${action} of a run awaiting approval`)
          const answered = performance.now()
          const came = await live.frame(seen, ctx.config.waitMs)
          if (!came) {
            // A stream that ended is told apart from one that stayed open and silent.
            if (live.ended) {
              const end = await live.answer.then(
                (r) => `its answer ended (status ${r.status}) after ${live.count} frames`,
                (err: Error) => `its connection broke after ${live.count} frames: ${err.message}`,
              )
              fail(`the SSE trace of run ${runId} ended before the ${action}'s frame came: ${end}`)
            }
            fail(`the ${action} of run ${runId} put no frame on its SSE trace within ${ctx.config.waitMs} ms`)
          }
          const ms = Math.max(0, Math.round(came.at - answered))
          took.push(`${action} ${ms}`)
          if (ms > PROMPT_MS) late.push(`${action} ${ms} ms`)
        }
        assert(
          late.length <= LATE_ALLOWED,
          `${late.length} of ${took.length} controls reached the SSE trace later than ${PROMPT_MS} ms after their answer (ms: ${took.join(', ')})`,
        )
      } finally {
        // The cancel ends the run, and with it the stream.
        await ctx.http.post(`/v1/runs/${runId}/cancel`).catch(() => undefined)
        await live.answer.catch(() => undefined)
      }
    },
  },
]

/** How many frames the stream carried once no more came for a moment (a control may write more than one). */
async function settle(live: LiveTrace): Promise<number> {
  for (;;) {
    const count = live.count
    if (!(await live.frame(count, 50))) return count
  }
}
