/**
 * The server's in-flight request tracker (src/http/in-flight.ts), which graceful shutdown relies on: what it counts,
 * what `drain` marks, what `settled` waits for, and that a closed response's slot is given to the next one.
 */
import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { requestTracker } from '../../src/http/in-flight.js'

function exchange(accept?: string): { req: IncomingMessage; res: ServerResponse } {
  const req = new IncomingMessage(new Socket())
  req.headers = accept ? { accept } : {}
  return { req, res: new ServerResponse(req) }
}

function tracked(tracker: ReturnType<typeof requestTracker>, accept?: string): ServerResponse {
  const { req, res } = exchange(accept)
  tracker.track(req, res)
  return res
}

describe('in-flight request tracker', () => {
  it('counts a request from its start until its response closes, once however often it closes', () => {
    const tracker = requestTracker()
    const a = tracked(tracker)
    const b = tracked(tracker)
    expect(tracker.active).toBe(2)
    a.emit('close')
    a.emit('close')
    expect(tracker.active).toBe(1)
    b.emit('close')
    expect(tracker.active).toBe(0)
  })

  it("gives a closed response's slot to the next one, and never lets a stale close free another's", () => {
    const tracker = requestTracker()
    const first = tracked(tracker)
    first.emit('close')
    const second = tracked(tracker)
    // The first one closing again must not release the slot the second one now holds.
    first.emit('close')
    expect(tracker.active).toBe(1)
    tracker.drain()
    expect(second.getHeader('connection')).toBe('close')
  })

  it('drain marks every answer not yet sent, and every later one, to close its connection', () => {
    const tracker = requestTracker()
    const pending = tracked(tracker)
    const sent = tracked(tracker)
    sent.writeHead(200)
    const closed = tracked(tracker)
    closed.emit('close')
    tracker.drain()
    expect(pending.getHeader('connection')).toBe('close')
    expect(closed.getHeader('connection')).toBeUndefined()
    expect(tracked(tracker).getHeader('connection')).toBe('close')
  })

  it('settled waits for ordinary answers, not for live streams', async () => {
    const tracker = requestTracker()
    tracked(tracker, 'text/event-stream')
    const ordinary = tracked(tracker, 'application/json')
    let done = false
    const settled = tracker.settled(5_000).then(() => {
      done = true
    })
    await new Promise((r) => setTimeout(r, 60))
    expect(done).toBe(false)
    ordinary.emit('close')
    await settled
    expect(done).toBe(true)
    expect(tracker.active).toBe(1)
  })

  it('settled gives up after its grace period', async () => {
    const tracker = requestTracker()
    tracked(tracker)
    const started = Date.now()
    await tracker.settled(80)
    expect(Date.now() - started).toBeGreaterThanOrEqual(75)
    expect(tracker.active).toBe(1)
  })
})
