/**
 * Key ids leak nothing through timing (issue 44): refusing an unknown key id must cost what refusing a known key's
 * wrong secret costs. Before, an unknown id was read from the store on every try while a key in use answered from
 * the verified-key cache, so the refusal was slower by a store read (+17 to +42 µs mean over HTTP) and told an
 * attacker which ids exist.
 *
 * The comparison is statistical, built not to flake on a loaded 2-core machine: thousands of samples of each,
 * interleaved in alternating order (so load, GC and frequency changes fall on both alike), compared by their
 * medians (insensitive to preemption outliers) against a bound far above what two paths of equal work differ by
 * and far below what a store read adds. A store whose reads take 1 ms stands in for PostgreSQL across a network,
 * which makes the leak unmistakable when it is there; the same measurement over the real stores runs too.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { ManualClock } from '../../src/domain/clock.js'
import type { KeyCacheOptions } from '../../src/domain/keys/cache.js'
import { type BearerCredentials, KeyService } from '../../src/domain/keys/service.js'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { KeyRepo } from '../../src/store/repos/keys.js'
import { WorkspaceRepo } from '../../src/store/repos/workspaces.js'
import { backends } from '../support/backends.js'
import { administrationOf } from '../support/key-administration.js'
import { testTempDir } from '../support/temp.js'

const SAMPLES = 3000
const WARM_UP = 300

/** A key store whose every read takes a millisecond, as one across a network does. */
class DistantKeyRepo extends KeyRepo {
  override async byId(id: string) {
    await new Promise((resolve) => setTimeout(resolve, 1))
    return super.byId(id)
  }
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz'
/** A well-formed token whose key id no store has. */
function unknownToken(): string {
  const id = Array.from(randomBytes(26), (b) => ALPHABET[b % 36]).join('')
  return `aok_${id}_${randomBytes(32).toString('base64url')}`
}

/** The same key id with another secret of the right form. */
function wrongSecret(token: string): string {
  // `aok_` + 26 characters of key id + `_`; the secret may itself hold `_`.
  return `${token.slice(0, 31)}${randomBytes(32).toString('base64url')}`
}

/** Nanoseconds one refusal takes on the HTTP auth middleware's path (the cache first, the store on a miss). */
async function refusalNs(keys: KeyService, credentials: BearerCredentials): Promise<number> {
  const start = process.hrtime.bigint()
  const verdict = keys.verifyCached(credentials) ?? (await keys.verifyRequest(credentials))
  const ns = Number(process.hrtime.bigint() - start)
  if (verdict !== 'unknown') throw new Error(`expected a refusal, got ${JSON.stringify(verdict)}`)
  return ns
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

/** Medians (µs) of both refusals, sampled in interleaved pairs whose order alternates. */
async function medians(keys: KeyService, known: string, unknown: string) {
  const wrong = { accessToken: wrongSecret(known) }
  const absent = { accessToken: unknown }
  const a: number[] = []
  const b: number[] = []
  for (let i = 0; i < WARM_UP + SAMPLES; i++) {
    const first = i % 2 === 0
    const x = await refusalNs(keys, first ? wrong : absent)
    const y = await refusalNs(keys, first ? absent : wrong)
    if (i < WARM_UP) continue
    a.push(first ? x : y)
    b.push(first ? y : x)
  }
  return { wrongSecretUs: median(a) / 1000, unknownIdUs: median(b) / 1000 }
}

/** A key in use: issued, then verified once with its secret, as its owner's requests do. */
async function keyInUse(keys: KeyService, db: Db, workspace: string): Promise<string> {
  const issued = await administrationOf(keys, db).issue({ workspace })
  expect(await keys.verifyRequest({ accessToken: issued.token })).toMatchObject({ keyId: issued.key_id })
  return issued.token
}

const service = (db: Db, repo: KeyRepo, cache: KeyCacheOptions = {}) =>
  new KeyService(
    repo,
    new WorkspaceRepo(db),
    new ManualClock(Date.now()),
    cache,
    undefined,
    loadConfig({}).keyWatchPollMs,
  )

describe('refusing an unknown key id costs what a wrong secret does', () => {
  let db: Db
  beforeAll(async () => {
    db = await openDb(`sqlite:${join(testTempDir('timing-'), 'keys.db')}`)
    await migrate(db)
  })
  afterAll(() => db.close())

  // The bound: paths of equal work differ by well under a microsecond; a store read here adds 1,000 µs or more.
  const BOUND_US = 100

  it('with a store 1 ms away: the medians differ by less than the bound', async () => {
    const keys = service(db, new DistantKeyRepo(db))
    const m = await medians(keys, await keyInUse(keys, db, 'timing-distant'), unknownToken())
    expect(Math.abs(m.unknownIdUs - m.wrongSecretUs), JSON.stringify(m)).toBeLessThan(BOUND_US)
  }, 60_000)

  it('and the same measurement sees the leak when absent ids are not remembered (the check can fail)', async () => {
    const keys = service(db, new DistantKeyRepo(db), { absentTtlMs: 0 })
    const known = await keyInUse(keys, db, 'timing-leaky')
    const wrong = { accessToken: wrongSecret(known) }
    const absent = { accessToken: unknownToken() }
    const a: number[] = []
    const b: number[] = []
    // Fewer samples: each unknown-id refusal waits for the 1 ms read.
    for (let i = 0; i < 200; i++) {
      a.push(await refusalNs(keys, wrong))
      b.push(await refusalNs(keys, absent))
    }
    expect((median(b) - median(a)) / 1000).toBeGreaterThan(BOUND_US)
  }, 60_000)
})

describe.each(backends())('on $name, with its real reads', (backend) => {
  let db: Db
  beforeAll(async () => {
    db = await openDb(await backend.freshUrl())
    await migrate(db)
  })
  afterAll(() => db.close())

  // Equal work differs by a few hundredths of a µs here; an SQLite read adds about 10 µs, a PostgreSQL one 150.
  it('the medians of both refusals differ by less than 3 µs', async () => {
    const keys = service(db, new KeyRepo(db))
    const m = await medians(keys, await keyInUse(keys, db, `timing-${backend.name}`), unknownToken())
    expect(Math.abs(m.unknownIdUs - m.wrongSecretUs), JSON.stringify(m)).toBeLessThan(3)
  }, 60_000)
})

describe('AGENTOPS_KEY_WATCH_POLL_MS', () => {
  it('is at least 1: the watch is the one way an expiry or an unannounced revoke reaches open sockets', () => {
    expect(loadConfig({ AGENTOPS_KEY_WATCH_POLL_MS: '250' }).keyWatchPollMs).toBe(250)
    expect(() => loadConfig({ AGENTOPS_KEY_WATCH_POLL_MS: '0' })).toThrow(
      /AGENTOPS_KEY_WATCH_POLL_MS must be at least 1/,
    )
  })
})
