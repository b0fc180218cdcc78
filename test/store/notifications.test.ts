/**
 * The PostgreSQL change feed: a change published by one process is heard by another exactly once (and not twice
 * by its publisher); after the LISTEN connection is lost, the feed reconnects, wakes everyone once (`resync`) and
 * hears changes again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Change } from '../../src/domain/changes.js'
import { openDb } from '../../src/store/open.js'
import { decodeChange, encodeChange, PgChangeFeed } from '../../src/store/postgres/change-feed.js'
import type { PostgresDb } from '../../src/store/postgres/db.js'
import { backends } from '../support/backends.js'

const postgres = backends().filter((b) => b.name === 'postgres')

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe.skipIf(postgres.length === 0)('PgChangeFeed', () => {
  let db: PostgresDb
  let a: PgChangeFeed
  let b: PgChangeFeed
  const heardByA: Change[] = []
  const heardByB: Change[] = []

  beforeAll(async () => {
    const url = await postgres[0]!.freshUrl()
    db = (await openDb(url)) as PostgresDb
    a = new PgChangeFeed(url, db, { reconnectMinMs: 20 })
    b = new PgChangeFeed(url, db, { reconnectMinMs: 20 })
    a.subscribe((c) => heardByA.push(c))
    b.subscribe((c) => heardByB.push(c))
    await a.start()
    await b.start()
  })

  afterAll(async () => {
    await a?.stop()
    await b?.stop()
    await db?.close()
  })

  it('carries every kind of change to the other replica once, and not back to its publisher', async () => {
    heardByA.length = 0
    heardByB.length = 0
    const changes: Change[] = [
      { kind: 'events' },
      { kind: 'records', workspaceId: 'ws_1', connectorId: 'c:1', lastSeq: 42 },
      { kind: 'run', runId: 'run_1' },
    ]
    for (const c of changes) a.publish(c)
    await until(() => heardByB.length >= 3)
    await new Promise((r) => setTimeout(r, 100))
    // Each publish notifies from whichever pooled connection is free, so arrival order is not publish order; that is
    // fine for wake-ups (readers read after their last seq). What matters: each change arrives once, none echoes.
    const byKind = (list: Change[]) => [...list].sort((x, y) => x.kind.localeCompare(y.kind))
    expect(byKind(heardByB)).toEqual(byKind(changes))
    expect(heardByA).toEqual(changes) // delivered locally on publish, in order, not again from the notification
  })

  it('reconnects after its LISTEN connection is killed, wakes everyone once, then hears changes again', async () => {
    heardByB.length = 0
    await db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE application_name = 'agentops-changes' AND pid <> pg_backend_pid()`,
    )
    await until(() => heardByB.some((c) => c.kind === 'resync'))
    await until(() => a.listening && b.listening)
    expect(heardByB.filter((c) => c.kind === 'resync')).toHaveLength(1)
    a.publish({ kind: 'run', runId: 'run_after' })
    await until(() => heardByB.some((c) => c.kind === 'run' && c.runId === 'run_after'))
  })

  it('sends every change published before it stops, though its store closes right after', async () => {
    heardByB.length = 0
    // A replica stopping: its scheduler's last finished runs publish, the feed stops, the store closes. The second
    // change waits for the first one's notifying statement; stop() must not leave it for a closed store.
    const stopping = (await openDb(db.url)) as PostgresDb
    const feed = new PgChangeFeed(stopping.url, stopping.pipeline)
    const warned: unknown[] = []
    const warn = console.warn
    console.warn = (...args: unknown[]) => void warned.push(args)
    try {
      await feed.start()
      feed.publish({ kind: 'run', runId: 'run_last_1' })
      feed.publish({ kind: 'run', runId: 'run_last_2' })
      await feed.stop()
      await stopping.close()
    } finally {
      console.warn = warn
    }
    expect(warned).toEqual([])
    await until(() => heardByB.filter((c) => c.kind === 'run').length >= 2)
    expect(heardByB).toEqual([
      { kind: 'run', runId: 'run_last_1' },
      { kind: 'run', runId: 'run_last_2' },
    ])
  })

  it('ignores payloads it does not understand, and sends oversized changes as a resync', () => {
    expect(decodeChange('not json')).toBeUndefined()
    expect(decodeChange('{"o":"x","k":"zz"}')).toBeUndefined()
    expect(decodeChange('{"o":"x","k":"r","w":"ws"}')).toBeUndefined()
    expect(decodeChange('{"o":"x","k":"a"}')).toEqual({ origin: 'x', change: { kind: 'resync' } })
    const huge: Change = { kind: 'records', workspaceId: 'ws', connectorId: 'c'.repeat(9000), lastSeq: 1 }
    expect(decodeChange(encodeChange('x', huge))).toEqual({ origin: 'x', change: { kind: 'resync' } })
    const small: Change = { kind: 'records', workspaceId: 'ws', connectorId: 'c', lastSeq: 1 }
    expect(decodeChange(encodeChange('x', small))).toEqual({ origin: 'x', change: small })
  })
})
