import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { KeyService } from '../../src/domain/keys/service.js'
import { MIGRATIONS, migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { KeyRepo } from '../../src/store/repos/keys.js'
import { MemoryRateCounters, RateCounterRepo } from '../../src/store/repos/rate-counters.js'
import { WorkspaceRepo } from '../../src/store/repos/workspaces.js'
import { backends } from '../support/backends.js'
import { administrationOf } from '../support/key-administration.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { testTempDir } from '../support/temp.js'

const windows = (burstQuota: number, hourlyQuota: number) => [
  { name: 'burst', start: 0, windowMs: 10_000, quota: burstQuota },
  { name: 'hourly', start: 0, windowMs: 3_600_000, quota: hourlyQuota },
]

describe.each(backends())('rate counters on $name', (backend) => {
  it('counts concurrent requests exactly, and stops counting after the window that refuses', async () => {
    const db = await openDb(await backend.freshUrl())
    await migrate(db)
    const counters = db.dialect === 'sqlite' ? new MemoryRateCounters(db) : new RateCounterRepo(db)
    const results = await Promise.all(
      Array.from({ length: 40 }, () => counters.consume('ws', windows(25, 100))),
    )
    const burst = results.map((r) => r[0]).sort((a, b) => (a ?? 0) - (b ?? 0))
    expect(burst).toEqual(Array.from({ length: 40 }, (_, i) => i + 1)) // every request its own count
    // Only the 25 the burst window let through were counted in the hour.
    expect(Math.max(...results.map((r) => r[1] ?? 0))).toBe(25)
    await counters.flush(0)
    expect(await new RateCounterRepo(db).current('ws', 'hourly', 0)).toBe(25)
    await db.close()
  })

  it('lets exactly the hourly quota through when concurrent requests exhaust it inside the burst window', async () => {
    const db = await openDb(await backend.freshUrl())
    await migrate(db)
    const counters = db.dialect === 'sqlite' ? new MemoryRateCounters(db) : new RateCounterRepo(db)
    const results = await Promise.all(
      Array.from({ length: 40 }, () => counters.consume('ws', windows(25, 10))),
    )
    const allowed = results.filter(([burst, hourly]) => (burst ?? 0) <= 25 && (hourly ?? 0) <= 10)
    expect(allowed).toHaveLength(10)
    // Every request the burst window let through has its own hourly figure, counted even where it was refused.
    const hourly = results
      .filter(([burst]) => (burst ?? 0) <= 25)
      .map((r) => r[1])
      .sort((a, b) => (a ?? 0) - (b ?? 0))
    expect(hourly).toEqual(Array.from({ length: 25 }, (_, i) => i + 1))
    await db.close()
  })
})

describe.each(backends())('the burst window setting on $name', (backend) => {
  it('is stored and read back, kept by a change of tier or burst limit, and changed when given', async () => {
    const db = await openDb(await backend.freshUrl())
    await migrate(db)
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12))
    const keys = administrationOf(
      new KeyService(new KeyRepo(db), new WorkspaceRepo(db), clock, {}, undefined, 1_000),
      db,
      clock,
    )
    // Read from the store itself each time, never from what the service returned.
    const stored = async (name: string) => {
      const ws = await new WorkspaceRepo(db).byName(name)
      return ws && { tier: ws.tier, burstLimit: ws.burstLimit, burstWindowSeconds: ws.burstWindowSeconds }
    }
    const issued = await keys.issue({ workspace: 'short', tier: 'pro', burstWindowSeconds: 3 })
    expect(issued.burst_window_seconds).toBe(3)
    expect(await stored('short')).toEqual({ tier: 'pro', burstLimit: 1_000, burstWindowSeconds: 3 })
    await keys.configureWorkspace('short', { tier: 'enterprise' })
    expect(await stored('short')).toEqual({ tier: 'enterprise', burstLimit: 10_000, burstWindowSeconds: 3 })
    await keys.configureWorkspace('short', { burstLimit: 7 })
    expect(await stored('short')).toEqual({ tier: 'enterprise', burstLimit: 7, burstWindowSeconds: 3 })
    await keys.configureWorkspace('short', { features: ['x'] })
    expect(await stored('short')).toMatchObject({ burstWindowSeconds: 3 })
    // A key issued into the workspace later, without the setting, keeps it too.
    expect((await keys.issue({ workspace: 'short' })).burst_window_seconds).toBe(3)
    await keys.configureWorkspace('short', { burstWindowSeconds: 60 })
    expect(await stored('short')).toEqual({ tier: 'enterprise', burstLimit: 7, burstWindowSeconds: 60 })
    await keys.configureWorkspace('short', { tier: 'standard', burstWindowSeconds: 5 })
    expect(await stored('short')).toEqual({ tier: 'standard', burstLimit: 100, burstWindowSeconds: 5 })
    // Without the setting: the 10 s window, created by issue or by configureWorkspace.
    expect((await keys.issue({ workspace: 'usual' })).burst_window_seconds).toBe(10)
    expect(await stored('usual')).toMatchObject({ burstWindowSeconds: 10 })
    await keys.configureWorkspace('set-later', { burstLimit: 4 })
    expect(await stored('set-later')).toMatchObject({ burstLimit: 4, burstWindowSeconds: 10 })
    await db.close()
  })

  it('gives every workspace stored before migration 015 the 10 s window', async () => {
    const db = await openDb(await backend.freshUrl())
    const last = MIGRATIONS.findIndex((m) => m.id === '015_burst_window')
    expect(last).toBeGreaterThan(0)
    await migrate(db, MIGRATIONS.slice(0, last))
    await db.run(
      `INSERT INTO workspaces (id, name, tier, limit_per_hour, burst_limit, policy_classes, features, created_at)
       VALUES ('ws_old', 'old', 'pro', 10000, 1000, '[]', '[]', 0)`,
    )
    await migrate(db)
    expect((await new WorkspaceRepo(db).byName('old'))?.burstWindowSeconds).toBe(10)
    await db.close()
  })
})

describe('in-memory counters of the embedded store', () => {
  it('write their counts back, resume them after a restart, and forget ended windows', async () => {
    const url = `sqlite:${join(testTempDir('rate-'), 'rate.db')}`
    const db = await openDb(url)
    await migrate(db)
    const first = new MemoryRateCounters(db)
    for (let i = 0; i < 3; i++) await first.consume('ws', windows(5, 100))
    expect(await new RateCounterRepo(db).current('ws', 'burst', 0)).toBe(0) // nothing written per request
    await first.flush(5_000)
    expect(await new RateCounterRepo(db).current('ws', 'burst', 0)).toBe(3)
    const second = new MemoryRateCounters(db) // a restarted server
    expect(await second.consume('ws', windows(5, 100))).toEqual([4, 4])
    expect(await second.consume('ws', windows(5, 100))).toEqual([5, 5])
    expect(await second.consume('ws', windows(5, 100))).toEqual([6, 5])
    await second.flush(10_000) // the burst window has ended: written, then dropped from memory
    expect(await new RateCounterRepo(db).current('ws', 'burst', 0)).toBe(6)
    expect(await second.consume('ws', windows(5, 100))).toEqual([7, 5]) // reloaded, still exact
    await db.close()
  })

  it('count without waiting only once every window is loaded, with the same figures as consume', async () => {
    const url = `sqlite:${join(testTempDir('rate-'), 'rate.db')}`
    const db = await openDb(url)
    await migrate(db)
    await new RateCounterRepo(db).store('ws', 'burst', 0, 2) // a previous server's count
    const counters = new MemoryRateCounters(db)
    expect(counters.consumeNow('ws', windows(4, 100))).toBeUndefined() // not loaded: nothing counted
    expect(await counters.consume('ws', windows(4, 100))).toEqual([3, 1])
    expect(counters.consumeNow('ws', windows(4, 100))).toEqual([4, 2])
    expect(counters.consumeNow('ws', windows(4, 100))).toEqual([5, 2]) // refused by burst: hourly not counted
    expect(await counters.consume('ws', windows(4, 100))).toEqual([6, 2])
    await db.close()
  })

  it('keep the burst window exact across a graceful server restart', async () => {
    const databaseUrl = `sqlite:${join(testTempDir('rate-'), 'rate.db')}`
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12))
    let t = await startTestServer({ databaseUrl, clock })
    const { token } = await t.createKey({ tier: 'enterprise', limitPerHour: 100, burstLimit: 5 })
    for (let i = 0; i < 3; i++) expect((await t.request('GET', '/v1/agents', { token })).status).toBe(200)
    await t.close()
    t = await startTestServer({ databaseUrl, clock })
    for (let i = 0; i < 2; i++) expect((await t.request('GET', '/v1/agents', { token })).status).toBe(200)
    expect((await t.request('GET', '/v1/agents', { token })).status).toBe(429)
    await t.close()
  })
})

describe.each(backends().filter((b) => b.name === 'postgres'))(
  'rate limits across replicas on $name',
  (backend) => {
    let one: TestServer
    let two: TestServer
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12))
    beforeAll(async () => {
      const databaseUrl = await backend.freshUrl()
      one = await startTestServer({ databaseUrl, clock })
      two = await startTestServer({ databaseUrl, clock })
    })
    afterAll(async () => {
      await one.close()
      await two.close()
    })

    it('lets exactly the quota through across every key and replica, concurrently', async () => {
      const settings = {
        workspace: 'replicated',
        tier: 'enterprise',
        limitPerHour: 1000,
        burstLimit: 20,
      } as const
      const a = await one.createKey(settings)
      const b = await one.createKey(settings)
      const sends = Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? one : two).request('GET', '/v1/agents', { token: i % 3 === 0 ? a.token : b.token }),
      )
      const statuses = (await Promise.all(sends)).map((r) => r.status)
      expect(statuses.filter((s) => s === 200)).toHaveLength(20)
      expect(statuses.filter((s) => s === 429)).toHaveLength(10)
    })

    it('answers 429 to every refused read, even one counted while the read ran', async () => {
      const { token } = await one.createKey({
        workspace: 'alongside',
        tier: 'enterprise',
        limitPerHour: 1000,
        burstLimit: 20,
      })
      // Two reads counted first tell each replica the workspace has room, so the next reads run while counted.
      for (const t of [one, two]) expect((await t.request('GET', '/v1/agents', { token })).status).toBe(200)
      const missing = '/v1/runs/run_00000000000000000000000000'
      const answers = await Promise.all(
        Array.from({ length: 28 }, (_, i) => (i % 2 === 0 ? one : two).request('GET', missing, { token })),
      )
      const statuses = answers.map((r) => r.status)
      expect(statuses.filter((s) => s === 404)).toHaveLength(18)
      expect(statuses.filter((s) => s === 429)).toHaveLength(10)
      for (const refused of answers.filter((r) => r.status === 429)) {
        expect(refused.body.error.code).toBe('rate_limited')
        expect(refused.headers.get('ratelimit')).toMatch(/^"burst";r=0;/)
        expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
      }
      for (const read of answers.filter((r) => r.status === 404)) {
        expect(read.headers.get('ratelimit-policy')).toBe('"burst";q=20;w=10, "hourly";q=1000;w=3600')
      }
    })

    it('puts the figures on a read the text guard refuses while it is being counted', async () => {
      const { token } = await one.createKey({ workspace: 'guarded', tier: 'enterprise', limitPerHour: 1000 })
      // A first read counted alone tells the replica the workspace has room: the next is counted alongside.
      expect((await one.request('GET', '/v1/agents', { token })).status).toBe(200)
      const refused = await one.request('GET', '/v1/tools?cursor=%00%01', { token })
      expect(refused.status).toBe(400)
      expect(refused.headers.get('ratelimit-policy')).toMatch(/^"burst";q=\d+;w=10, "hourly";q=1000;w=3600$/)
      expect(refused.headers.get('ratelimit')).toMatch(/^"burst";r=\d+;t=\d+, "hourly";r=\d+;t=\d+$/)
    })
  },
)
