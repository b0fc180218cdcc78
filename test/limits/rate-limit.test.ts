import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { LimitsService } from '../../src/domain/limits/service.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { workspaceRecord } from '../support/workspace.js'

/** Parses `"burst";r=4;t=10, "hourly";r=11;t=3600` into { burst: {r, t}, hourly: {r, t} }. */
function parseRateLimit(value: string | null): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {}
  for (const item of (value ?? '').split(',')) {
    const [name, ...params] = item.trim().split(';')
    if (!name) continue
    out[name.replaceAll('"', '')] = Object.fromEntries(
      params.map((p) => {
        const [k, v] = p.split('=')
        return [k ?? '', Number(v)]
      }),
    )
  }
  return out
}

describe.each(backends())('rate limits on $name', (backend) => {
  let t: TestServer
  // Aligned to an hour, so the burst and hourly windows both start here.
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12))

  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl(), clock })
  })
  afterAll(() => t.close())

  const get = (token: string) => t.request('GET', '/v1/agents', { token })

  it('allows exactly the burst quota, refuses the next with 429, and recovers after the reset', async () => {
    clock.set(Date.UTC(2026, 5, 1, 12))
    const { token } = await t.createKey({ tier: 'enterprise', limitPerHour: 100, burstLimit: 5 })
    for (let i = 1; i <= 5; i++) {
      const res = await get(token)
      expect(res.status, `request ${i}`).toBe(200)
      expect(parseRateLimit(res.headers.get('ratelimit')).burst?.r).toBe(5 - i)
    }
    const refused = await get(token)
    expect(refused.status).toBe(429)
    expect(refused.body.error.code).toBe('rate_limited')
    expect(refused.body.error.detail).toMatchObject({ window: 'burst', limit: 5, window_seconds: 10 })
    expect(Date.parse(refused.body.error.detail.reset_at)).toBe(Date.UTC(2026, 5, 1, 12, 0, 10))
    expect(refused.headers.get('retry-after')).toBe('10')
    expect(refused.headers.get('ratelimit-policy')).toBe('"burst";q=5;w=10, "hourly";q=100;w=3600')
    expect(refused.body.error.request_id).toBe(refused.headers.get('x-request-id'))
    clock.advance(9_999)
    expect((await get(token)).status).toBe(429)
    clock.advance(1)
    expect((await get(token)).status).toBe(200)
  })

  it('keeps each workspace to its own burst window length: 3 s where set, 10 s where not', async () => {
    // 18:00 UTC is a multiple of 3 s and of 10 s: both windows start here.
    clock.set(Date.UTC(2026, 5, 1, 18))
    const short = await t.createKey({
      tier: 'enterprise',
      limitPerHour: 100,
      burstLimit: 5,
      burstWindowSeconds: 3,
    })
    const usual = await t.createKey({ tier: 'enterprise', limitPerHour: 100, burstLimit: 5 })
    clock.advance(1_500)
    for (let i = 1; i <= 5; i++) {
      const res = await get(short.token)
      expect(res.status, `request ${i}`).toBe(200)
      expect(res.headers.get('ratelimit-policy')).toBe('"burst";q=5;w=3, "hourly";q=100;w=3600')
      const burst = parseRateLimit(res.headers.get('ratelimit')).burst
      expect(burst?.r).toBe(5 - i)
      expect(burst?.t).toBeLessThanOrEqual(3)
      expect(burst?.t).toBe(2) // 1.5 s of the 3 s window are left, rounded up
    }
    const refused = await get(short.token)
    expect(refused.status).toBe(429)
    expect(refused.body.error.detail).toMatchObject({ window: 'burst', limit: 5, window_seconds: 3 })
    expect(Date.parse(refused.body.error.detail.reset_at)).toBe(Date.UTC(2026, 5, 1, 18, 0, 3))
    expect(refused.headers.get('retry-after')).toBe('2')
    // The workspace without the setting: the 10 s window, as before.
    const other = await get(usual.token)
    expect(other.headers.get('ratelimit-policy')).toBe('"burst";q=5;w=10, "hourly";q=100;w=3600')
    expect(parseRateLimit(other.headers.get('ratelimit')).burst?.t).toBe(9)
    // The 3 s window's counts reset at its boundary (18:00:03), long before a 10 s window's would.
    clock.advance(1_499)
    expect((await get(short.token)).status).toBe(429)
    clock.advance(1)
    const reopened = await get(short.token)
    expect(reopened.status).toBe(200)
    expect(parseRateLimit(reopened.headers.get('ratelimit')).burst).toEqual({ r: 4, t: 3 })
    for (let i = 0; i < 4; i++) expect((await get(short.token)).status).toBe(200)
    expect((await get(short.token)).status).toBe(429)
    // And again at 18:00:06, while the 10 s workspace is still in its first window.
    clock.advance(3_000)
    expect((await get(short.token)).status).toBe(200)
    expect(parseRateLimit((await get(usual.token)).headers.get('ratelimit')).burst).toEqual({ r: 3, t: 4 })
  })

  it('allows exactly the hourly quota across burst windows, refuses the next, and recovers next hour', async () => {
    clock.set(Date.UTC(2026, 5, 1, 13))
    const { token } = await t.createKey({ tier: 'enterprise', limitPerHour: 12, burstLimit: 5 })
    const statuses: number[] = []
    for (let i = 1; i <= 12; i++) {
      if (i > 1 && (i - 1) % 4 === 0) clock.advance(10_000)
      statuses.push((await get(token)).status)
    }
    expect(statuses).toEqual(Array(12).fill(200))
    const refused = await get(token)
    expect(refused.status).toBe(429)
    expect(refused.body.error.detail.window).toBe('hourly')
    expect(parseRateLimit(refused.headers.get('ratelimit')).hourly?.r).toBe(0)
    expect(Number(refused.headers.get('retry-after'))).toBe(3600 - 20)
    clock.set(Date.UTC(2026, 5, 1, 14))
    expect((await get(token)).status).toBe(200)
  })

  it('does not bill the hour for requests the burst window refused', async () => {
    clock.set(Date.UTC(2026, 5, 1, 15))
    const { token } = await t.createKey({ tier: 'enterprise', limitPerHour: 6, burstLimit: 3 })
    for (let i = 0; i < 3; i++) expect((await get(token)).status).toBe(200)
    for (let i = 0; i < 5; i++) expect((await get(token)).status).toBe(429)
    clock.advance(10_000)
    for (let i = 0; i < 3; i++) expect((await get(token)).status).toBe(200)
    expect((await get(token)).status).toBe(429)
  })

  it('shares the windows between every key of a workspace', async () => {
    clock.set(Date.UTC(2026, 5, 1, 16))
    const settings = { workspace: 'shared-ws', tier: 'enterprise', limitPerHour: 50, burstLimit: 4 } as const
    const a = await t.createKey(settings)
    const b = await t.createKey(settings)
    expect(a.workspace_id).toBe(b.workspace_id)
    expect((await get(a.token)).status).toBe(200)
    expect((await get(b.token)).status).toBe(200)
    expect((await get(a.token)).status).toBe(200)
    expect((await get(b.token)).status).toBe(200)
    expect((await get(a.token)).status).toBe(429)
    expect((await get(b.token)).status).toBe(429)
    // Another workspace is untouched.
    const other = await t.createKey({ tier: 'enterprise', limitPerHour: 50, burstLimit: 4 })
    expect((await get(other.token)).status).toBe(200)
  })

  it('puts both figures on every authenticated response, successes and errors alike', async () => {
    clock.set(Date.UTC(2026, 5, 1, 17))
    const { token } = await t.createKey({ tier: 'standard' })
    const answers = [
      await get(token),
      await t.request('GET', '/v1/agents/agt_00000000000000000000000000', { token }),
      await t.request('POST', '/v1/agents', { token, body: { name: 1 } }),
      await t.request('GET', '/v1/agents?limit=201', { token }),
    ]
    expect(answers.map((a) => a.status)).toEqual([200, 404, 400, 400])
    for (const a of answers) {
      expect(a.headers.get('ratelimit-policy')).toBe('"burst";q=100;w=10, "hourly";q=1000;w=3600')
      const figures = parseRateLimit(a.headers.get('ratelimit'))
      expect(figures.burst?.r).toBeTypeOf('number')
      expect(figures.hourly?.r).toBeTypeOf('number')
    }
    expect(parseRateLimit(answers[3]?.headers.get('ratelimit') ?? null).hourly?.r).toBe(1000 - 4)
  })
})

describe('headroom for reads counted alongside', () => {
  it('is known only after a count, and only while more than a tenth of every window is left', async () => {
    let used = 0
    const counters = {
      consume: async () => [++used, used],
      flush: async () => {},
      purgeBefore: async () => 0,
    }
    const limits = new LimitsService(counters, new ManualClock(Date.UTC(2026, 5, 1, 12)))
    const workspace = workspaceRecord('ws_h')
    expect(limits.hasHeadroom(workspace)).toBe(false) // nothing counted yet on this replica
    await limits.consume(workspace) // 19 of 20 left
    expect(limits.hasHeadroom(workspace)).toBe(true)
    used = 17
    await limits.consume(workspace) // 2 of 20 left: a tenth, not more
    expect(limits.hasHeadroom(workspace)).toBe(false)
  })
})
