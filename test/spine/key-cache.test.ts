import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { ManualClock } from '../../src/domain/clock.js'
import type { KeyAdministration } from '../../src/domain/keys/administration.js'
import {
  ABSENT,
  ABSENT_TTL_MS,
  type Absent,
  type CachedKey,
  KEY_CACHE_TTL_MS,
  KEY_REFRESH_AHEAD,
  type VerifiedEntry,
  VerifiedKeyCache,
} from '../../src/domain/keys/cache.js'
import { KeyService } from '../../src/domain/keys/service.js'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { KeyRepo } from '../../src/store/repos/keys.js'
import { WorkspaceRepo } from '../../src/store/repos/workspaces.js'
import { backends } from '../support/backends.js'
import { administrationOf } from '../support/key-administration.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { workspaceRecord } from '../support/workspace.js'

const workspace = (id: string) => workspaceRecord(id, { tier: 'pro', limitPerHour: 1, burstLimit: 1 })
/** When an entry in use is read again in the background. */
const AHEAD_MS = KEY_CACHE_TTL_MS * KEY_REFRESH_AHEAD
const key = (id: string, workspaceId: string) => ({
  id,
  workspaceId,
  identity: 'default',
  scopes: ['*'],
  secretHash: '0'.repeat(64),
  createdAt: 0,
  expiresAt: null,
  revokedAt: null,
})

/** The revocation time of a cached key (null: not revoked), or what the cache said instead of an entry. */
const revokedAt = (found: VerifiedEntry | Absent | undefined) =>
  found === ABSENT ? 'absent' : found === undefined ? 'not cached' : found.key.revokedAt

describe('verified-key cache', () => {
  it('trusts an entry for less than the TTL, never at or after it', () => {
    let now = 0
    const cache = new VerifiedKeyCache({ now: () => now })
    cache.set('k', { key: key('k', 'w'), workspace: workspace('w') })
    now = KEY_CACHE_TTL_MS - 1
    expect(cache.get('k')).toBeDefined()
    now = KEY_CACHE_TTL_MS
    expect(cache.get('k')).toBeUndefined()
  })

  it('reads an entry again in the background from KEY_REFRESH_AHEAD of its TTL, answering from it meanwhile', async () => {
    let now = 0
    const reads: ((found: CachedKey | undefined) => void)[] = []
    const cache = new VerifiedKeyCache(
      { now: () => now },
      () => new Promise<CachedKey | undefined>((resolve) => reads.push(resolve)),
    )
    cache.set('k', { key: key('k', 'w'), workspace: workspace('w') })
    now = AHEAD_MS - 1
    expect(revokedAt(cache.get('k'))).toBeNull()
    expect(reads).toHaveLength(0)
    now = AHEAD_MS
    expect(revokedAt(cache.get('k'))).toBeNull()
    expect(revokedAt(cache.get('k'))).toBeNull()
    // One read, however many requests use the entry meanwhile.
    expect(reads).toHaveLength(1)
    reads[0]?.({ key: { ...key('k', 'w'), revokedAt: 5 }, workspace: workspace('w') })
    await expect.poll(() => revokedAt(cache.get('k'))).toBe(5)
    // Trusted for the TTL from when the refresh was sent, not from when it came back.
    now = AHEAD_MS + KEY_CACHE_TTL_MS - 1
    expect(cache.get('k')).toBeDefined()
    now = AHEAD_MS + KEY_CACHE_TTL_MS
    expect(cache.get('k')).toBeUndefined()
  })

  it('keeps an entry whose background read failed until its TTL, and remembers as absent one the store no longer has', async () => {
    let now = 0
    let fail = true
    const cache = new VerifiedKeyCache({ now: () => now }, async () => {
      if (fail) throw new Error('store down')
      return undefined
    })
    cache.set('k', { key: key('k', 'w'), workspace: workspace('w') })
    now = AHEAD_MS
    expect(cache.get('k')).toBeDefined()
    await new Promise((r) => setTimeout(r, 0))
    now = KEY_CACHE_TTL_MS - 1
    expect(cache.get('k')).toBeDefined()
    fail = false
    await expect.poll(() => cache.get('k')).toBe(ABSENT)
  })

  it('remembers an id the store does not have as absent for ABSENT_TTL_MS, apart from the keys', async () => {
    let now = 0
    let reads = 0
    const cache = new VerifiedKeyCache({ now: () => now, maxEntries: 2, maxAbsent: 3 }, async () => {
      reads++
      return undefined
    })
    expect(await cache.load('ghost', async () => undefined)).toBeUndefined()
    expect(cache.get('ghost')).toBe(ABSENT)
    // Far past a key's TTL it is still answered from memory, without a read.
    now = ABSENT_TTL_MS - 1
    expect(cache.get('ghost')).toBe(ABSENT)
    expect(reads).toBe(0)
    now = ABSENT_TTL_MS
    expect(cache.get('ghost')).toBeUndefined()
    // Guessed ids fill their own bounded list and never push a key out.
    cache.set('k', { key: key('k', 'w'), workspace: workspace('w') })
    for (const id of ['g1', 'g2', 'g3', 'g4', 'g5']) await cache.load(id, async () => undefined)
    expect(cache.absentSize).toBe(3)
    expect(cache.get('g1')).toBeUndefined()
    expect(cache.get('g5')).toBe(ABSENT)
    expect(revokedAt(cache.get('k'))).toBeNull()
    // A key found under an id remembered as absent replaces it; forgetting drops both kinds.
    cache.set('g5', { key: key('g5', 'w'), workspace: workspace('w') })
    expect(revokedAt(cache.get('g5'))).toBeNull()
    cache.forgetKey('g4')
    expect(cache.get('g4')).toBeUndefined()
  })

  it('keeps at most maxEntries, dropping the oldest, and forgets by key or workspace', () => {
    const cache = new VerifiedKeyCache({ maxEntries: 3, now: () => 0 })
    for (const id of ['a', 'b', 'c', 'd']) cache.set(id, { key: key(id, 'w1'), workspace: workspace('w1') })
    expect(cache.size).toBe(3)
    expect(cache.get('a')).toBeUndefined()
    cache.set('x', { key: key('x', 'w2'), workspace: workspace('w2') })
    cache.forgetKey('b')
    expect(cache.get('b')).toBeUndefined()
    cache.forgetWorkspace('w1')
    expect(cache.size).toBe(1)
    expect(cache.get('x')).toBeDefined()
  })
})

/** The store's key reads, counted, each held until the test opens the gate when one is set. */
class GatedKeyRepo extends KeyRepo {
  reads = 0
  /** Reads whose row the store has answered (held at the gate, if any, after that). */
  fetched = 0
  gate: Promise<void> | undefined

  /** Holds every read from now on at a gate; the function returned opens it. */
  hold(): () => void {
    let open = () => {}
    this.gate = new Promise<void>((resolve) => {
      open = resolve
    })
    return open
  }

  override async byId(id: string) {
    this.reads++
    const gate = this.gate
    const row = await super.byId(id)
    this.fetched++
    await gate
    return row
  }
}

describe.each(backends())('key verification with the cache on $name', (backend) => {
  let dbA: Db
  let dbB: Db
  let monotonic = 0
  const clock = new ManualClock(Date.UTC(2026, 10, 23))
  // Two replicas: their own KeyService (and cache) on one shared store.
  let a: KeyService
  let b: KeyService
  let adminA: KeyAdministration
  const keyService = (db: Db, keys: KeyRepo = new KeyRepo(db)) =>
    new KeyService(
      keys,
      new WorkspaceRepo(db),
      clock,
      { now: () => monotonic },
      undefined,
      loadConfig({}).keyWatchPollMs,
    )

  beforeAll(async () => {
    const url = await backend.freshUrl()
    dbA = await openDb(url)
    await migrate(dbA)
    dbB = await openDb(url)
    a = keyService(dbA)
    adminA = administrationOf(a, dbA, clock)
    b = keyService(dbB)
  })
  afterAll(async () => {
    await dbA.close()
    await dbB.close()
  })

  it('refuses a key revoked on this replica at once, and on another replica once the TTL has passed', async () => {
    const issued = await adminA.issue({ workspace: 'cache-revoke' })
    expect(await a.verifyRequest({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
    expect(await b.verifyRequest({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
    expect(await adminA.revoke(issued.key_id)).toBe(true)
    expect(await a.verifyRequest({ accessToken: issued.token })).toBe('revoked')
    // Replica B answers from its cache within the stated bound, and reads the row again at the bound.
    monotonic += KEY_CACHE_TTL_MS - 1
    expect(await b.verifyRequest({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
    monotonic += 1
    expect(await b.verifyRequest({ accessToken: issued.token })).toBe('revoked')
  })

  it('refuses at once, within the TTL, a key whose revoke the watch of its open sockets found in the store', async () => {
    const issued = await adminA.issue({ workspace: 'cache-watch-revoke' })
    expect(await b.verifyRequest({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
    const ended: string[] = []
    const unwatch = b.watch.watch(issued.key_id, (why) => ended.push(why))
    try {
      // Revoked on replica A with no change feed: B hears of it only through its watch's read of the store.
      expect(await adminA.revoke(issued.key_id)).toBe(true)
      expect(await b.verifyRequest({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
      await b.watch.poll()
      expect(ended).toEqual(['revoked'])
      // Still within B's TTL: its sockets closed, so a new request with the token is refused too.
      expect(await b.verifyRequest({ accessToken: issued.token })).toBe('revoked')
    } finally {
      unwatch()
    }
  })

  it('checks expiry against the clock on every request, from the cached row', async () => {
    const issued = await adminA.issue({ workspace: 'cache-expiry', expiresInSeconds: 60 })
    expect(await a.verifyRequest({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
    clock.advance(59_999)
    expect(await a.verifyRequest({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
    clock.advance(1)
    expect(await a.verifyRequest({ accessToken: issued.token })).toBe('expired')
  })

  it('still compares the secret of a cached key', async () => {
    const issued = await adminA.issue({ workspace: 'cache-secret' })
    expect(await a.verifyRequest({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
    const forged = `${issued.token.slice(0, -1)}${issued.token.endsWith('A') ? 'B' : 'A'}`
    expect(await a.verifyRequest({ accessToken: forged })).toBe('unknown')
    expect(a.verifyCached({ accessToken: forged })).toBe('unknown')
  })

  it('remembers only a secret that matched: a wrong one before or after the right one is refused', async () => {
    const issued = await adminA.issue({ workspace: 'cache-proven' })
    const forged = `${issued.token.slice(0, -1)}${issued.token.endsWith('A') ? 'B' : 'A'}`
    // The forged token loads and caches the key's row, and is refused against the stored hash.
    expect(await a.verifyRequest({ accessToken: forged })).toBe('unknown')
    expect(a.verifyCached({ accessToken: forged })).toBe('unknown')
    // The right one is accepted (and from now on compared with its own bytes, without hashing) ...
    for (let i = 0; i < 3; i++) {
      expect(a.verifyCached({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
    }
    // ... and the wrong one stays refused.
    expect(a.verifyCached({ accessToken: forged })).toBe('unknown')
  })

  it('answers from the cache alone only what the store path would answer, and defers to it otherwise', async () => {
    const issued = await adminA.issue({ workspace: 'cache-sync', expiresInSeconds: 60 })
    const credentials = { authorization: `Bearer ${issued.token}` }
    // Nothing cached yet: the caller must read the store.
    expect(a.verifyCached(credentials)).toBeUndefined()
    expect(a.verifyCached({ authorization: 'Basic x' })).toBe('malformed')
    expect(a.verifyCached({})).toBe('missing')
    expect(await a.verifyRequest(credentials)).toMatchObject({ keyId: issued.key_id })
    expect(a.verifyCached(credentials)).toEqual(await a.verifyRequest(credentials))
    clock.advance(60_000)
    expect(a.verifyCached(credentials)).toBe('expired')
    clock.advance(-60_000)
    // Past the TTL the row must be read again, so the cache alone does not answer.
    monotonic += KEY_CACHE_TTL_MS
    expect(a.verifyCached(credentials)).toBeUndefined()
    expect(await a.verifyRequest(credentials)).toMatchObject({ keyId: issued.key_id })
    await adminA.revoke(issued.key_id)
    expect(a.verifyCached(credentials)).toBeUndefined()
    expect(await a.verifyRequest(credentials)).toBe('revoked')
  })

  it('reads a key once for the requests that miss it at once, again once the TTL has passed', async () => {
    const issued = await adminA.issue({ workspace: 'cache-single-read' })
    const repo = new GatedKeyRepo(dbA)
    const fresh = keyService(dbA, repo)
    const all = () =>
      Promise.all(Array.from({ length: 20 }, () => fresh.verifyRequest({ accessToken: issued.token })))
    for (const answer of await all()) expect(answer).toMatchObject({ keyId: issued.key_id })
    expect(repo.reads).toBe(1)
    monotonic += KEY_CACHE_TTL_MS
    for (const answer of await all()) expect(answer).toMatchObject({ keyId: issued.key_id })
    expect(repo.reads).toBe(2)
    // The shared read's secret check counts once too: a forged token among them is still refused.
    monotonic += KEY_CACHE_TTL_MS
    const forged = `${issued.token.slice(0, -1)}${issued.token.endsWith('A') ? 'B' : 'A'}`
    const mixed = await Promise.all([
      fresh.verifyRequest({ accessToken: issued.token }),
      fresh.verifyRequest({ accessToken: forged }),
      fresh.verifyRequest({ accessToken: issued.token }),
    ])
    expect(mixed.map((m) => (typeof m === 'string' ? m : m.keyId))).toEqual([
      issued.key_id,
      'unknown',
      issued.key_id,
    ])
  })

  it('reads a key again for a request that begins after a revoke on this replica, and keeps no read it dropped', async () => {
    const issued = await adminA.issue({ workspace: 'cache-single-revoke' })
    const repo = new GatedKeyRepo(dbA)
    const fresh = keyService(dbA, repo)
    const open = repo.hold()
    // A request misses, and its read has the row as it was before the revoke, not answered yet.
    const before = fresh.verifyRequest({ accessToken: issued.token })
    await expect.poll(() => repo.fetched, { timeout: 20_000 }).toBe(1)
    repo.gate = undefined
    expect(await administrationOf(fresh, dbA, clock).revoke(issued.key_id)).toBe(true)
    // A request that begins after the revoke reads again: sharing the earlier read would admit it.
    const after = fresh.verifyRequest({ accessToken: issued.token })
    await expect.poll(() => repo.reads, { timeout: 20_000 }).toBe(2)
    expect(await after).toBe('revoked')
    // The earlier request began before the revoke, so the key was valid for it; the read it made fills nothing.
    open()
    expect(await before).toMatchObject({ keyId: issued.key_id })
    expect(fresh.verifyCached({ accessToken: issued.token })).toBe('revoked')
  })

  it('never makes a request wait for the read of a key in use: it is read again while it still answers', async () => {
    const issued = await adminA.issue({ workspace: 'cache-refresh-ahead' })
    const credentials = { accessToken: issued.token }
    const repo = new GatedKeyRepo(dbA)
    const fresh = keyService(dbA, repo)
    expect(await fresh.verifyRequest(credentials)).toMatchObject({ keyId: issued.key_id })
    expect(repo.reads).toBe(1)
    const open = repo.hold()
    monotonic += AHEAD_MS
    // Answered from the cache while the read it started is held at the gate.
    for (let i = 0; i < 5; i++)
      expect(fresh.verifyCached(credentials)).toMatchObject({ keyId: issued.key_id })
    await expect.poll(() => repo.fetched, { timeout: 20_000 }).toBe(2)
    expect(repo.reads).toBe(2)
    // Another replica revokes the key after that read fetched its row, before it is back.
    repo.gate = undefined
    await administrationOf(b, dbB, clock).revoke(issued.key_id)
    open()
    // The read was sent before that revoke: the entry it fills holds the row as it was then, for its TTL.
    monotonic += AHEAD_MS - 1
    await expect.poll(() => fresh.verifyCached(credentials)).toMatchObject({ keyId: issued.key_id })
    // From KEY_REFRESH_AHEAD of that TTL on, the next read sees the revoke: no answer came from a row older than
    // the TTL.
    monotonic += 1
    fresh.verifyCached(credentials)
    await expect.poll(() => fresh.verifyCached(credentials), { timeout: 20_000 }).toBe('revoked')
    expect(repo.reads).toBe(3)
  })

  it('does not share a read sent the TTL or longer before a request', async () => {
    const issued = await adminA.issue({ workspace: 'cache-single-slow' })
    const repo = new GatedKeyRepo(dbA)
    const fresh = keyService(dbA, repo)
    const open = repo.hold()
    const slow = fresh.verifyRequest({ accessToken: issued.token })
    await expect.poll(() => repo.fetched, { timeout: 20_000 }).toBe(1)
    repo.gate = undefined
    monotonic += KEY_CACHE_TTL_MS
    // Its row may be older than another replica's revocation bound by now: this request reads for itself.
    const later = fresh.verifyRequest({ accessToken: issued.token })
    await expect.poll(() => repo.reads, { timeout: 20_000 }).toBe(2)
    expect(await later).toMatchObject({ keyId: issued.key_id })
    open()
    await slow
  })

  it('sees a workspace change made on this replica at once', async () => {
    const issued = await adminA.issue({ workspace: 'cache-settings', tier: 'standard' })
    expect(await a.verifyRequest({ accessToken: issued.token })).toMatchObject({
      workspace: { tier: 'standard' },
    })
    await adminA.configureWorkspace('cache-settings', { tier: 'pro' })
    expect(await a.verifyRequest({ accessToken: issued.token })).toMatchObject({ workspace: { tier: 'pro' } })
  })
})

describe.each(backends())('revocation across two servers on $name', (backend) => {
  let one: TestServer
  let two: TestServer
  beforeAll(async () => {
    const databaseUrl = await backend.freshUrl()
    one = await startTestServer({ databaseUrl })
    two = await startTestServer({ databaseUrl })
  })
  afterAll(async () => {
    await one.close()
    await two.close()
  })

  it('refuses the revoked key on the other server after the stated bound', async () => {
    const issued = await one.createKey()
    expect((await two.request('GET', '/v1/agents', { token: issued.token })).status).toBe(200)
    await one.services.keyAdmin.revoke(issued.key_id)
    expect((await one.request('GET', '/v1/agents', { token: issued.token })).status).toBe(401)
    // The bound is measured in the other server's own monotonic time, so waiting past it cannot be too short.
    await new Promise((r) => setTimeout(r, KEY_CACHE_TTL_MS + 50))
    const refused = await two.request('GET', '/v1/agents', { token: issued.token })
    expect(refused.status).toBe(401)
    expect(refused.body.error.detail.reason).toBe('revoked')
  })
})
