import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Db, openDb } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { LocalIdempotencyRepo } from '../../src/store/repos/idempotency.js'

const DAY = 24 * 3600 * 1000
const answer = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }

describe('idempotency claims of the embedded store', () => {
  let db: Db
  beforeAll(async () => {
    db = await openDb(`sqlite:${join(mkdtempSync(join(tmpdir(), 'agentops-idem-')), 'idem.db')}`)
    await migrate(db)
  })
  afterAll(() => db.close())
  const rows = async () =>
    (await db.query('SELECT * FROM idempotency_keys WHERE idem_key = $1', ['k1'])).length

  it('gives one of many concurrent claims the key, writes nothing until the answer, then replays it', async () => {
    const repo = new LocalIdempotencyRepo(db)
    const claims = await Promise.all(
      Array.from({ length: 20 }, () => repo.claim('ws', 'k1', 'fp', 1000, DAY)),
    )
    expect(claims.filter((c) => c.kind === 'claimed')).toHaveLength(1)
    expect(claims.filter((c) => c.kind === 'in_progress')).toHaveLength(19)
    expect(await rows()).toBe(0)
    await repo.complete('ws', 'k1', answer)
    expect(await rows()).toBe(1)
    // A restarted server (a new repo) replays from the store.
    const replay = await new LocalIdempotencyRepo(db).claim('ws', 'k1', 'fp', 2000, DAY)
    expect(replay).toEqual({ kind: 'replay', fingerprint: 'fp', response: answer })
    expect(await new LocalIdempotencyRepo(db).claim('ws', 'k1', 'fp', 1000 + DAY, DAY)).toEqual({
      kind: 'claimed',
    })
  })

  it('frees a released claim for the next request', async () => {
    const repo = new LocalIdempotencyRepo(db)
    expect((await repo.claim('ws', 'k2', 'fp', 1000, DAY)).kind).toBe('claimed')
    expect((await repo.claim('ws', 'k2', 'fp', 1000, DAY)).kind).toBe('in_progress')
    await repo.release('ws', 'k2')
    expect((await repo.claim('ws', 'k2', 'fp', 1000, DAY)).kind).toBe('claimed')
  })
})
