import type { IncomingMessage, ServerResponse } from 'node:http'

const SLOT = Symbol('agentops.in-flight-slot')

/** A response with the slot the tracker gave it (a property of its own, so closing it needs no lookup). */
interface TrackedResponse extends ServerResponse {
  [SLOT]?: number
}

/** How often `settled` looks again while answers are still being worked on. */
const SETTLE_POLL_MS = 25

/**
 * The requests a server is answering, so shutdown can wait for them. Live trace streams (SSE) never finish on
 * their own: shutdown does not wait for them, and their clients resume with Last-Event-ID.
 *
 * Responses are held in reused slots of an array, not as keys of a Map. A long-lived Map whose keys come and go
 * with every request is rebuilt by V8 as they do, and its old tables stay linked to the new ones, so every response
 * in it survives the young generation's collections and is promoted to the old one, which lengthens every
 * scavenge; slots promote next to nothing (bench/profile-get.ts prints the garbage collector's share per request).
 */
export function requestTracker() {
  const responses: (TrackedResponse | undefined)[] = []
  /** Whether the response in the same slot is a live stream (SSE). */
  const streaming: boolean[] = []
  const free: number[] = []
  let active = 0
  let draining = false

  // One listener function for every response, not a closure (and a `once` wrapper) per request.
  function forget(this: TrackedResponse): void {
    const slot = this[SLOT]
    if (slot === undefined || responses[slot] !== this) return
    responses[slot] = undefined
    this[SLOT] = undefined
    free.push(slot)
    active -= 1
  }

  return {
    /** A request from its start until its response closes. */
    track(req: IncomingMessage, res: ServerResponse): void {
      const tracked: TrackedResponse = res
      const slot = free.pop() ?? responses.length
      responses[slot] = tracked
      streaming[slot] = (req.headers.accept ?? '').includes('text/event-stream')
      tracked[SLOT] = slot
      active += 1
      res.on('close', forget)
      if (draining) res.setHeader('connection', 'close')
    },
    /** Requests being answered now, live streams included. */
    get active(): number {
      return active
    },
    /** From now on every answer (also those already being worked on) closes its connection. */
    drain(): void {
      draining = true
      for (const res of responses) if (res && !res.headersSent) res.setHeader('connection', 'close')
    },
    /** Resolves once every answer that is not a live stream finished, or after `graceMs`. */
    async settled(graceMs: number): Promise<void> {
      const deadline = Date.now() + graceMs
      const working = () => responses.some((res, slot) => res !== undefined && !streaming[slot])
      while (Date.now() < deadline && working()) {
        await new Promise((r) => setTimeout(r, SETTLE_POLL_MS))
      }
    },
  }
}
