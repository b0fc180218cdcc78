/**
 * The request shapes the HTTP benchmarks load a server with, one definition each, so bench:http, its profiles and
 * its A/B runs measure the same requests: a cached read of the run, and a keyed create of an agent.
 */
import type autocannon from 'autocannon'
import { withFreshIdempotencyKey } from './fresh-key.js'

/** GET /v1/runs/{id} of the server's seeded run, behind its bearer token. */
export function runRead(target: { token: string; runId: string }): autocannon.Request {
  return {
    method: 'GET',
    path: `/v1/runs/${target.runId}`,
    headers: { authorization: `Bearer ${target.token}` },
  }
}

/** POST /v1/agents with a fresh Idempotency-Key on every send: the claim, the work and the stored answer each time. */
export function keyedAgentCreate(target: { token: string }): autocannon.Request {
  return withFreshIdempotencyKey({
    method: 'POST',
    path: '/v1/agents',
    headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-agent', behavior: 'autonomous', capabilities: ['a'] }),
  })
}

/** The median of some figures (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}
