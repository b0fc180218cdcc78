/**
 * The rate-limit step when a read runs while its request is being counted (shared counters, a workspace with room):
 * whatever the steps after it do, the answer waits for the count, carries its figures, and a refused count or a
 * failed one decides the answer. Driven through a Hono app with a stand-in for Node's response, where the step puts
 * the figures (src/http/middleware/rate-limit.ts). A later step that throws before returning a promise is allowed by the
 * series contract (src/http/middleware/series.ts), though no step of the app does it today.
 */
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { ApiError } from '../../src/domain/errors.js'
import { policiesFor, stateOf } from '../../src/domain/limits/rate-limit.js'
import type { RateDecision } from '../../src/domain/limits/service.js'
import { rateLimit } from '../../src/http/middleware/rate-limit.js'
import { inSeries, type Step } from '../../src/http/middleware/series.js'
import type { AppEnv } from '../../src/surface/context.js'
import { workspaceRecord } from '../support/workspace.js'

const workspace = workspaceRecord('ws_alongside')
const NOW = Date.UTC(2026, 5, 1, 12)

function decision(burstUsed: number): RateDecision {
  const policies = policiesFor(workspace)
  const states = policies.map((p, i) => stateOf(p, NOW, i === 0 ? burstUsed : 1))
  const refusedBy = states.find((s) => s.used > s.quota)
  return refusedBy ? { policies, states, refusedBy } : { policies, states }
}

/** Node's response as far as the step uses it: the headers it sets. */
function outgoing(): { headers: Map<string, string>; setHeader(name: string, value: string): void } {
  const headers = new Map<string, string>()
  return { headers, setHeader: (name, value) => void headers.set(name.toLowerCase(), value) }
}

/** Shared counters (no answer without waiting); with room in the workspace, so the read is counted alongside. */
function limits(counting: () => Promise<RateDecision>, headroom = true) {
  return { consumeNow: () => undefined, hasHeadroom: () => headroom, consume: counting }
}

const signIn: Step = (c, next) => {
  c.set('auth', { workspaceId: workspace.id, keyId: 'key_1', identity: 'k', scopes: ['*'], workspace })
  return next()
}

function app(counting: () => Promise<RateDecision>, after: Step, headroom = true) {
  const hono = new Hono<AppEnv>()
  hono.onError((err) =>
    Response.json(
      { error: err instanceof ApiError ? err.code : 'internal' },
      { status: err instanceof ApiError ? err.status : 500 },
    ),
  )
  hono.use('*', inSeries(signIn, rateLimit(limits(counting, headroom)), after))
  hono.get('/read', (c) => c.json({ read: true }, 200))
  return hono
}

async function get(hono: Hono<AppEnv>) {
  const node = outgoing()
  const res = await hono.fetch(new Request('http://localhost/read'), { outgoing: node })
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: node.headers }
}

const later = <T>(value: T, ms = 5) => new Promise<T>((r) => setTimeout(() => r(value), ms))

/** A count that settles after `ms`, and the order in which it and the read began and ended. */
function observed(ms = 10) {
  const events: string[] = []
  const counting = () => {
    events.push('count sent')
    return later(decision(3), ms).then((d) => {
      events.push('count known')
      return d
    })
  }
  const read: Step = (_c, next) => {
    events.push('read started')
    return next()
  }
  return { events, counting, read }
}

describe('a read counted alongside', () => {
  it('runs while its count is in flight and is answered with the figures once the count is known', async () => {
    const { events, counting, read } = observed()
    const res = await get(app(counting, read))
    expect(events).toEqual(['count sent', 'read started', 'count known'])
    expect(res.status).toBe(200)
    expect(res.headers.get('ratelimit')).toMatch(/^"burst";r=17;/)
  })

  it('waits for its count first when the workspace is near its limit', async () => {
    const { events, counting, read } = observed()
    const res = await get(app(counting, read, false))
    expect(events).toEqual(['count sent', 'count known', 'read started'])
    expect(res.headers.get('ratelimit')).toMatch(/^"burst";r=17;/)
  })

  it('answers 429 when the count refuses, whatever the read found', async () => {
    const res = await get(
      app(
        () => later(decision(21)),
        (_c, next) => next(),
      ),
    )
    expect(res.status).toBe(429)
    expect(res.body.error).toBe('rate_limited')
    expect(res.headers.get('ratelimit')).toMatch(/^"burst";r=0;/)
  })

  it('puts the figures on the refusal of a later step that throws before returning a promise', async () => {
    const refuse: Step = () => {
      throw new ApiError('invalid_request', 'refused by a later step')
    }
    const res = await get(app(() => later(decision(3)), refuse))
    expect(res.status).toBe(400)
    expect(res.body.error).toBe('invalid_request')
    expect(res.headers.get('ratelimit')).toMatch(/^"burst";r=17;/)
  })

  it('puts the figures on the refusal of a later step that rejects', async () => {
    const refuse: Step = async () => {
      throw new ApiError('invalid_request', 'refused by a later step')
    }
    const res = await get(app(() => later(decision(3)), refuse))
    expect(res.status).toBe(400)
    expect(res.headers.get('ratelimit')).toMatch(/^"burst";r=17;/)
  })

  it('answers with the count failure when the count fails while the read runs', async () => {
    const failing = () => Promise.reject(new Error('store unreachable'))
    const res = await get(app(failing, (_c, next) => later(undefined, 10).then(next)))
    expect(res.status).toBe(500)
    expect(res.headers.get('ratelimit')).toBeUndefined()
  })
})
