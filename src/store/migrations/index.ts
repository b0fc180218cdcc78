import type { Db } from '../db.js'
import { migration as core } from './001_core.js'
import { migration as runs } from './002_runs.js'
import { migration as limits } from './003_limits.js'
import { migration as webhooks } from './004_webhooks.js'
import { migration as ingest } from './005_ingest.js'
import { migration as runCounts } from './006_run_counts.js'
import { migration as ingestBatchIndex } from './007_ingest_batch_index.js'
import { migration as runClaimAndSecrets } from './009_run_claim_and_secrets.js'
import { migration as runsAgentActive } from './010_runs_agent_active.js'
import { migration as dropTasksRun } from './011_drop_tasks_run.js'
import { migration as destinations } from './012_destinations.js'
import { migration as quotas } from './013_quotas.js'
import { migration as streamSocketReplicas } from './014_stream_socket_replicas.js'
import { migration as burstWindow } from './015_burst_window.js'
import { migration as slackSignaturesSeen } from './016_slack_signatures_seen.js'
import { migration as deliveriesLeased } from './017_deliveries_leased.js'
import { migration as oldestSubscription } from './018_oldest_subscription.js'
import type { Migration } from './migration.js'

/** In id order; append new ones, never edit a released one. */
export const MIGRATIONS: readonly Migration[] = [
  core,
  runs,
  limits,
  webhooks,
  ingest,
  runCounts,
  ingestBatchIndex,
  runClaimAndSecrets,
  runsAgentActive,
  dropTasksRun,
  destinations,
  quotas,
  streamSocketReplicas,
  burstWindow,
  slackSignaturesSeen,
  deliveriesLeased,
  oldestSubscription,
]

/** The PostgreSQL advisory lock migrations take (any constant of the kit's own). */
const MIGRATION_LOCK = 0x61676f70

/**
 * Applies pending migrations in order, each in its own transaction together with its schema_migrations row, so
 * a migration that fails half-way leaves nothing behind and is tried again whole on the next start.
 */
export async function migrate(db: Db, migrations: readonly Migration[] = MIGRATIONS): Promise<string[]> {
  await db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)',
  )
  const done = new Set((await db.query<{ id: string }>('SELECT id FROM schema_migrations')).map((r) => r.id))
  const applied: string[] = []
  for (const m of migrations) {
    if (done.has(m.id)) continue
    const fresh = await db.transaction(async (tx) => {
      // Another process may have applied it since the read above (ten operator commands on a fresh store, replicas
      // starting together): looked at again under the write lock, which SQLite's transaction holds from its BEGIN
      // and PostgreSQL's takes here, so a migration runs once and the others skip it.
      if (db.dialect === 'postgres') await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
      if (await tx.one('SELECT id FROM schema_migrations WHERE id = $1', [m.id])) return 0
      await tx.exec(m.sql)
      return tx.run(
        'INSERT INTO schema_migrations (id, applied_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING',
        [m.id, Date.now()],
      )
    })
    if (fresh > 0) applied.push(m.id)
  }
  return applied
}
