import { randomBytes } from 'node:crypto'
import type autocannon from 'autocannon'

/** Every key of this process starts with it: keys stay unique across processes and runs on one store. */
const PREFIX = randomBytes(6).toString('hex')
let sent = 0

/**
 * `request` with a fresh Idempotency-Key on every send: a keyed POST whose claim, work and stored answer all run each
 * time, never a replay.
 */
export function withFreshIdempotencyKey(request: autocannon.Request): autocannon.Request {
  return {
    ...request,
    setupRequest: (req) => ({
      ...req,
      headers: { ...req.headers, 'idempotency-key': `bench-${PREFIX}-${++sent}` },
    }),
  }
}
