import type { Db } from '../db.js'

export interface Migration {
  /** Ordered, never renamed once released: `001_core`. */
  id: string
  /** PostgreSQL-style DDL; the SQLite driver translates BIGSERIAL and BYTEA. */
  sql: string
}

// Each feature owns one file; append new ones, never edit a released one.
const registry: Migration[] = []

export function registerMigrations(...migrations: Migration[]): void {
  registry.push(...migrations)
}

export async function loadMigrations(): Promise<Migration[]> {
  const modules = [
    await import('./001_core.js'),
    await import('./002_runs.js'),
    await import('./003_limits.js'),
    await import('./004_webhooks.js'),
    await import('./005_ingest.js'),
    await import('./006_run_counts.js'),
  ]
  const all = [...modules.map((m) => m.migration), ...registry]
  return all.sort((a, b) => a.id.localeCompare(b.id))
}

/** Applies pending migrations in order, each in its own transaction, recording them in schema_migrations. */
export async function migrate(db: Db): Promise<string[]> {
  await db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)',
  )
  const done = new Set((await db.query<{ id: string }>('SELECT id FROM schema_migrations')).map((r) => r.id))
  const applied: string[] = []
  for (const m of await loadMigrations()) {
    if (done.has(m.id)) continue
    await db.exec(m.sql)
    await db.run(
      'INSERT INTO schema_migrations (id, applied_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING',
      [m.id, Date.now()],
    )
    applied.push(m.id)
  }
  return applied
}
