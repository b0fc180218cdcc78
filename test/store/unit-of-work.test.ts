import { Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { systemClock } from '../../src/domain/clock.js'
import { newId } from '../../src/domain/ids.js'
import { createServices, type Services } from '../../src/services.js'
import { type Db, hotPath, timesStatements } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { reportStoreProblemsTo } from '../../src/store/problems.js'
import { createRepositories } from '../../src/store/repos/index.js'
import { type Backend, backends } from '../support/backends.js'
import { workspaceRecord } from '../support/workspace.js'

/** What the HTTP layer passes every keyed request: the workspace whose quotas bound the answers its keys keep. */
const quotaOf = (workspaceId: string) => ({ quota: { workspace: workspaceRecord(workspaceId) } })

describe.each(backends())('units of work on $name', (backend) => {
  let db: Db
  let url: string
  beforeAll(async () => {
    url = await backend.freshUrl()
    db = await openDb(url)
    await migrate(db)
    await db.exec('CREATE TABLE uow_t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)')
  })
  afterAll(() => db.close())

  const count = async (k: string) =>
    Number((await db.one<{ n: number }>('SELECT COUNT(*) AS n FROM uow_t WHERE k = $1', [k]))?.n)

  it('takes in every statement of its context, through the Db, the hot path or a transaction, and rolls them back together', async () => {
    const hot = hotPath(db)
    await expect(
      db.unitOfWork(async (tx) => {
        expect(db.inUnitOfWork()).toBe(true)
        await db.run('INSERT INTO uow_t (k, v) VALUES ($1, 1)', ['a'])
        await db.transaction((inner) => inner.run('INSERT INTO uow_t (k, v) VALUES ($1, 2)', ['b']))
        await tx.run('INSERT INTO uow_t (k, v) VALUES ($1, 3)', ['c'])
        // Reads see the unit's own writes, whichever way they go.
        expect(await hot.one('SELECT v FROM uow_t WHERE k = $1', ['b'])).toEqual({ v: 2 })
        expect(await db.one('SELECT v FROM uow_t WHERE k = $1', ['a'])).toEqual({ v: 1 })
        throw new Error('undo')
      }),
    ).rejects.toThrow('undo')
    expect(db.inUnitOfWork()).toBe(false)
    expect((await count('a')) + (await count('b')) + (await count('c'))).toBe(0)
  })

  it('commits them together, then runs what waited for the commit outside its context; nothing after a rollback', async () => {
    const seen: { inUnit: boolean; rows: number }[] = []
    let heard!: () => void
    const told = new Promise<void>((resolve) => {
      heard = resolve
    })
    const after = () => {
      void count('d').then((rows) => {
        seen.push({ inUnit: db.inUnitOfWork(), rows })
        heard()
      })
    }
    await db.unitOfWork(async () => {
      await db.run('INSERT INTO uow_t (k, v) VALUES ($1, 1)', ['d'])
      db.afterCommit(after)
      expect(seen).toEqual([])
    })
    await told
    expect(seen).toEqual([{ inUnit: false, rows: 1 }])

    let ran = false
    await expect(
      db.unitOfWork(async () => {
        db.afterCommit(() => {
          ran = true
        })
        throw new Error('undo')
      }),
    ).rejects.toThrow('undo')
    expect(ran).toBe(false)
    db.afterCommit(() => {
      ran = true
    })
    expect(ran).toBe(true) // outside a unit: at once
  })

  it("reports a callback that throws to the store's problem log, and still runs the others", async () => {
    const problems: { err: unknown; message: string }[] = []
    reportStoreProblemsTo({ error: ({ err }, message) => problems.push({ err, message }) })
    try {
      let second = false
      await db.unitOfWork(async () => {
        await db.run('INSERT INTO uow_t (k, v) VALUES ($1, 1)', ['thrower'])
        db.afterCommit(() => {
          throw new Error('callback broke')
        })
        db.afterCommit(() => {
          second = true
        })
      })
      await vi.waitFor(() => expect(second).toBe(true))
      expect(problems).toEqual([
        { err: new Error('callback broke'), message: 'after-commit callback failed' },
      ])
    } finally {
      reportStoreProblemsTo({ error: ({ err }, message) => console.error(message, err) })
    }
  })

  it('lets other work go on while it is not running, and keeps it out while it is', async () => {
    const units = Array.from({ length: 20 }, (_, i) =>
      db.unitOfWork(async () => {
        const before = await db.one<{ v: number }>(
          'SELECT COALESCE(MAX(v), 0) AS v FROM uow_t WHERE k LIKE $1',
          ['seq-%'],
        )
        await db.run('INSERT INTO uow_t (k, v) VALUES ($1, $2)', [`seq-${i}`, Number(before?.v) + 1])
      }),
    )
    if (backend.name === 'sqlite') {
      // One writer: units run one after another, so each saw the one before it.
      await Promise.all(units)
      const rows = await db.query<{ v: number }>("SELECT v FROM uow_t WHERE k LIKE 'seq-%' ORDER BY v")
      expect(rows.map((r) => Number(r.v))).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    } else {
      await Promise.all(units)
      expect(
        Number((await db.one<{ n: number }>("SELECT COUNT(*) AS n FROM uow_t WHERE k LIKE 'seq-%'"))?.n),
      ).toBe(20)
    }
  })

  it('leaves work its context started and that outlives it on the ordinary path, even once another unit is open', async () => {
    // The storage is disabled when the last unit closes and enabled again by the next one; a continuation started
    // in a closed unit's context then sees that unit again, and must not send to its finished transaction.
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let outlived!: Promise<{ inUnit: boolean; wrote: Promise<number> }>
    await db.unitOfWork(async () => {
      outlived = gate.then(() => ({
        inUnit: db.inUnitOfWork(),
        wrote: db.run('INSERT INTO uow_t (k, v) VALUES ($1, 1)', ['outlived']),
      }))
    })
    await expect(
      db.unitOfWork(async () => {
        await db.run('INSERT INTO uow_t (k, v) VALUES ($1, 1)', ['second'])
        release()
        // Not awaiting its write: on SQLite it waits for this unit's lock.
        expect((await outlived).inUnit).toBe(false)
        throw new Error('undo the second unit')
      }),
    ).rejects.toThrow('undo the second unit')
    await (await outlived).wrote
    expect(await count('outlived')).toBe(1)
    expect(await count('second')).toBe(0)
  })
})

/** A fresh, migrated store with the services on it, and a second Db on the same database (another replica's view). */
async function openWithServices(
  backend: Backend,
): Promise<{ url: string; db: Db; services: Services; other: Db }> {
  const url = await backend.freshUrl()
  const db = await openDb(url)
  await migrate(db)
  const services = createServices({
    db,
    clock: systemClock,
    config: loadConfig({}, { databaseUrl: url, workers: false }),
  })
  return { url, db, services, other: await openDb(url) }
}

/** The sockets of each write to PostgreSQL at `port` until `stop`, in order. */
function watchWrites(port: number): { sockets: Socket[]; stop: () => void } {
  const original = Socket.prototype.write
  const sockets: Socket[] = []
  Socket.prototype.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    if (this.remotePort === port) sockets.push(this)
    return original.apply(this, args)
  } as Socket['write']
  return {
    sockets,
    stop: () => {
      Socket.prototype.write = original
    },
  }
}

describe.each(backends().filter((b) => b.name === 'postgres'))('a keyed request on $name', (backend) => {
  let db: Db
  let services: Services
  let other: Db
  let url: string
  beforeAll(async () => {
    ;({ url, db, services, other } = await openWithServices(backend))
  })
  afterAll(async () => {
    await other.close()
    await db.close()
  })

  it('rolls its work back and replays the answer that reached the key first when its own is refused at COMMIT', async () => {
    const ws = await services.keyAdmin.issue({ workspace: 'uow-race' })
    const response = {
      status: 201,
      headers: { 'content-type': 'application/json' },
      body: '{"winner":true}',
    }
    const outcome = await services.idempotency.once(
      ws.workspace_id,
      'race',
      'fp',
      async () => {
        await services.agents.create(ws.workspace_id, { name: 'loser', behavior: 'autonomous' })
        // Another replica's answer lands meanwhile (as if this unit's claim had read a snapshot from before it).
        await other.run(
          `INSERT INTO idempotency_keys (workspace_id, idem_key, fingerprint, state, status, headers, body, locked_until,
             created_at, expires_at) VALUES ($1, 'race', 'fp', 'done', 201, $2, $3, 0, 0, $4)`,
          [ws.workspace_id, JSON.stringify(response.headers), response.body, Date.now() + 60_000],
        )
        return { response: { status: 201, headers: {}, body: '{"winner":false}' }, failed: false }
      },
      quotaOf(ws.workspace_id),
    )
    expect(outcome).toEqual({ kind: 'replay', fingerprint: 'fp', response })
    expect(await db.query("SELECT id FROM agents WHERE name = 'loser'")).toEqual([])
  })

  it("is two round trips for a create: BEGIN with the claim, then the agents quota's count, the insert, its event and the answer with the COMMIT", async () => {
    const ws = await services.keyAdmin.issue({ workspace: 'uow-trips' })
    const create = (key: string) =>
      services.idempotency.once(
        ws.workspace_id,
        key,
        'fp',
        async () => {
          await services.agents.create(ws.workspace_id, { name: key, behavior: 'autonomous' })
          return { response: { status: 201, headers: {}, body: '{}' }, failed: false }
        },
        quotaOf(ws.workspace_id),
      )
    // Once first, so the connection is open and has its statements prepared (postgres.js describes a statement the
    // first time a connection sends it: a round trip more).
    await create('trips-warm-up')
    await services.changes.flush()
    // Socket writes to PostgreSQL: postgres.js writes what a connection was handed in one turn together, so a
    // statement that waited for its answer before the next was sent shows as a write of its own.
    const watched = watchWrites(Number(new URL(url).port))
    const writes = () => watched.sockets.length
    let beforeWork = -1
    let duringWork = -1
    try {
      const outcome = await services.idempotency.once(
        ws.workspace_id,
        'trips',
        'fp',
        async () => {
          beforeWork = writes()
          await services.agents.create(ws.workspace_id, { name: 'two-trips', behavior: 'autonomous' })
          duringWork = writes() - beforeWork
          return { response: { status: 201, headers: {}, body: '{}' }, failed: false }
        },
        quotaOf(ws.workspace_id),
      )
      expect(outcome).toEqual({ kind: 'answered' })
    } finally {
      watched.stop()
    }
    // Nothing is sent during the work: the `agents` quota's count goes with the COMMIT too (a count past the quota
    // fails the commit), so its row is locked for the commit alone.
    expect({ beforeWork, duringWork }).toEqual({ beforeWork: 1, duringWork: 0 })
    expect(await other.query("SELECT name FROM agents WHERE name = 'two-trips'")).toEqual([
      { name: 'two-trips' },
    ])
    expect(await other.one('SELECT state FROM idempotency_keys WHERE idem_key = $1', ['trips'])).toEqual({
      state: 'done',
    })
  })
})

describe.each(backends().filter((b) => b.name === 'postgres'))(
  'a writes-only keyed request on $name',
  (backend) => {
    let db: Db
    let services: Services
    let other: Db
    let url: string
    let workspaceId: string
    beforeAll(async () => {
      ;({ url, db, services, other } = await openWithServices(backend))
      workspaceId = (await services.keyAdmin.issue({ workspace: 'uow-deferred' })).workspace_id
    })
    afterAll(async () => {
      await other.close()
      await db.close()
    })

    const answer = (name: string) => ({ status: 201, headers: {}, body: JSON.stringify({ name }) })
    /** A writes-only create: an agent's row alone (POST /v1/agents also counts its quota, test/quotas covers it). */
    const create = (key: string, name: string, work: () => Promise<void> = async () => {}) =>
      services.idempotency.once(
        workspaceId,
        key,
        'fp',
        async () => {
          const now = Date.now()
          await db.transaction((tx) =>
            createRepositories(db)
              .agents.in(tx)
              .insert({
                id: newId('agt', now),
                workspaceId,
                name,
                behavior: 'autonomous',
                capabilities: [],
                policyEnvelope: 'default',
                createdAt: now,
                updatedAt: now,
              }),
          )
          await work()
          return { response: answer(name), failed: false }
        },
        { writesOnly: true, ...quotaOf(workspaceId) },
      )
    const agentsNamed = async (name: string) =>
      (await other.query('SELECT id FROM agents WHERE workspace_id = $1 AND name = $2', [workspaceId, name]))
        .length
    const storeAnswer = (key: string, body: string, expiresAt: number) =>
      other.run(
        `INSERT INTO idempotency_keys (workspace_id, idem_key, fingerprint, state, status, headers, body, locked_until,
           created_at, expires_at) VALUES ($1, $2, 'fp', 'done', 201, '{}', $3, 0, 0, $4)`,
        [workspaceId, key, body, expiresAt],
      )

    /**
     * An ordinary keyed create of `name` that holds the key until `release`; resolves once it holds it, with the
     * request's outcome still to come.
     */
    async function holdKey(key: string, name: string) {
      let release = () => {}
      let holding = () => {}
      const held = new Promise<void>((resolve) => {
        holding = resolve
      })
      const holder = services.idempotency.once(
        workspaceId,
        key,
        'fp',
        async () => {
          await services.agents.create(workspaceId, { name, behavior: 'autonomous' })
          holding()
          await new Promise<void>((resolve) => {
            release = resolve
          })
          return { response: answer(name), failed: false }
        },
        quotaOf(workspaceId),
      )
      await held
      return { holder, release: () => release() }
    }

    it('sends nothing during the work, then the claim and the work as one statement on one connection', async () => {
      await create('deferred-warm-up', 'deferred-warm-up')
      await services.changes.flush()
      const writes = watchWrites(Number(new URL(url).port))
      const statements: string[] = []
      if (!timesStatements(db)) throw new Error('PostgreSQL times its statements')
      db.timeStatements((path) => statements.push(path))
      let duringWork = -1
      try {
        const outcome = await create('deferred', 'deferred', async () => {
          duringWork = writes.sockets.length
        })
        expect(outcome).toEqual({ kind: 'answered' })
      } finally {
        writes.stop()
      }
      expect(duringWork).toBe(0)
      expect(statements).toEqual(['transaction'])
      expect(writes.sockets.length).toBeGreaterThan(0)
      expect(new Set(writes.sockets).size).toBe(1)
      expect(await agentsNamed('deferred')).toBe(1)
      expect(
        await other.one('SELECT state, body FROM idempotency_keys WHERE idem_key = $1', ['deferred']),
      ).toEqual({
        state: 'done',
        body: JSON.stringify({ name: 'deferred' }),
      })
    })

    it('replays an answer the key holds, and its own work leaves nothing', async () => {
      await storeAnswer('answered', '{"first":true}', Date.now() + 60_000)
      const outcome = await create('answered', 'second-of-answered')
      expect(outcome).toEqual({
        kind: 'replay',
        fingerprint: 'fp',
        response: { status: 201, headers: {}, body: '{"first":true}' },
      })
      expect(await agentsNamed('second-of-answered')).toBe(0)
    })

    it('commits its refused writes, once, in the ordinary claim when the key held only an expired answer', async () => {
      await storeAnswer('expired', '{"old":true}', Date.now() - 1)
      const afterCommit = vi.fn()
      const outcome = await create('expired', 'after-expiry', async () => {
        db.afterCommit(afterCommit)
      })
      expect(outcome).toEqual({ kind: 'answered' })
      expect(await agentsNamed('after-expiry')).toBe(1)
      expect(afterCommit).toHaveBeenCalledTimes(1)
      expect(await other.one('SELECT body FROM idempotency_keys WHERE idem_key = $1', ['expired'])).toEqual({
        body: JSON.stringify({ name: 'after-expiry' }),
      })
    })

    it('answers in progress while another request holds the key, and commits nothing of its own', async () => {
      const { holder, release } = await holdKey('held', 'holder')
      try {
        expect(await create('held', 'while-held')).toEqual({ kind: 'in_progress', fingerprint: 'fp' })
      } finally {
        release()
      }
      expect(await holder).toEqual({ kind: 'answered' })
      expect(await agentsNamed('while-held')).toBe(0)
      expect(await agentsNamed('holder')).toBe(1)
    })

    it('does not store its refusal (4xx) while another request holds the key: in progress, and the holder answers', async () => {
      const { holder, release } = await holdKey('held-refusal', 'refusal-holder')
      const refusal = { status: 400, headers: {}, body: '{"error":"bad"}' }
      try {
        const outcome = await services.idempotency.once(
          workspaceId,
          'held-refusal',
          'fp-other',
          async () => ({ response: refusal, failed: true }),
          { writesOnly: true, ...quotaOf(workspaceId) },
        )
        expect(outcome).toEqual({ kind: 'in_progress', fingerprint: 'fp-other' })
      } finally {
        release()
      }
      expect(await holder).toEqual({ kind: 'answered' })
      expect(
        await other.one('SELECT fingerprint, status FROM idempotency_keys WHERE idem_key = $1', [
          'held-refusal',
        ]),
      ).toEqual({ fingerprint: 'fp', status: 201 })
    })

    it('creates exactly one resource for 20 simultaneous requests with one key', async () => {
      const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => create('burst', `burst-${i}`)))
      const answered = outcomes.filter((o) => o.kind === 'answered')
      expect(answered).toHaveLength(1)
      for (const o of outcomes) expect(['answered', 'replay', 'in_progress']).toContain(o.kind)
      const names = await other.query<{ name: string }>(
        "SELECT name FROM agents WHERE workspace_id = $1 AND name LIKE 'burst-%'",
        [workspaceId],
      )
      expect(names).toHaveLength(1)
      const stored = await other.one<{ body: string }>(
        'SELECT body FROM idempotency_keys WHERE idem_key = $1',
        ['burst'],
      )
      expect(stored?.body).toBe(JSON.stringify({ name: names[0]?.name }))
    })

    it('fails whole when its work sends a statement that needs an answer', async () => {
      const deferred = db.deferredUnitOfWork?.bind(db)
      if (!deferred) throw new Error('PostgreSQL has deferred units')
      await expect(
        deferred(async () => {
          await services.agents.create(workspaceId, { name: 'before-a-read', behavior: 'autonomous' })
          await db.query('SELECT 1')
        }),
      ).rejects.toThrow(/sends nothing before its commit/)
      expect(await agentsNamed('before-a-read')).toBe(0)
    })
  },
)
