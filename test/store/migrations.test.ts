/**
 * Migrations that change an existing schema, run the way a server upgrading in place runs them: on a database
 * already at the earlier migrations. 011 drops `tasks_run`, an index no query reads (its comment says why).
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Db } from '../../src/store/db.js'
import { MIGRATIONS, migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { backends } from '../support/backends.js'

const opened: Db[] = []
afterEach(async () => {
  for (const d of opened.splice(0)) await d.close()
})

async function indexesOfTasks(db: Db): Promise<string[]> {
  const rows =
    db.dialect === 'sqlite'
      ? await db.query<{ name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tasks' ORDER BY name",
        )
      : await db.query<{ name: string }>(
          "SELECT indexname AS name FROM pg_indexes WHERE tablename = 'tasks' ORDER BY indexname",
        )
  return rows.map((r) => r.name)
}

describe.each(backends())('schema migrations on $name', (backend) => {
  it('012 adds destinations and tags every existing outbox row as a webhook delivery', async () => {
    const db = await fresh()
    const upTo011 = MIGRATIONS.slice(
      0,
      MIGRATIONS.findIndex((m) => m.id === '012_destinations'),
    )
    await migrate(db, upTo011)
    await db.run(
      `INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, event_seq, event_kind, payload,
         status, attempts, next_attempt_at, created_at, updated_at)
       VALUES ('dlv_old', 'whk_old', 'ws', 'evt_old', 1, 'run.failed', '{}', 'pending', 0, 1, 1, 1)`,
    )
    expect(await migrate(db, MIGRATIONS.slice(0, upTo011.length + 1))).toEqual(['012_destinations'])
    const row = await db.one<{ channel: string }>(
      "SELECT channel FROM webhook_deliveries WHERE id = 'dlv_old'",
    )
    expect(row?.channel).toBe('webhook')
    expect(await db.query('SELECT id FROM destinations')).toEqual([])
  })

  async function fresh(): Promise<Db> {
    const db = await openDb(await backend.freshUrl())
    opened.push(db)
    return db
  }

  it('011 drops tasks_run from a database migrated up to 010, and keeps the indexes queries read', async () => {
    const db = await fresh()
    const upTo010 = MIGRATIONS.slice(
      0,
      MIGRATIONS.findIndex((m) => m.id === '011_drop_tasks_run'),
    )
    await migrate(db, upTo010)
    expect(await indexesOfTasks(db)).toContain('tasks_run')
    expect(await migrate(db, MIGRATIONS.slice(0, upTo010.length + 1))).toEqual(['011_drop_tasks_run'])
    const after = await indexesOfTasks(db)
    expect(after).not.toContain('tasks_run')
    expect(after).toContain('tasks_workspace')
  })

  it('a fresh database ends with the same indexes on tasks, and migrating again changes nothing', async () => {
    const db = await fresh()
    await migrate(db)
    expect(await indexesOfTasks(db)).not.toContain('tasks_run')
    expect(await migrate(db)).toEqual([])
  })
})
