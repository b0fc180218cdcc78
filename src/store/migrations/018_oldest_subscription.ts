import type { Migration } from './migration.js'

/**
 * The oldest live subscription of each outbox channel (`minAfterSeq` in src/store/repos/webhooks.ts and
 * destinations.ts), read by every fan-out pass, that is after every commit that appends an event: without these
 * partial indexes that read scanned every subscription ever made, deleted ones included, so its cost grew with the
 * store's history. With them it is one index seek, and the indexes hold the live subscriptions alone.
 */
export const migration: Migration = {
  id: '018_oldest_subscription',
  sql: `
CREATE INDEX IF NOT EXISTS webhooks_active_after ON webhooks (after_event_seq)
  WHERE deleted_at IS NULL AND status = 'active';
CREATE INDEX IF NOT EXISTS destinations_active_after ON destinations (after_event_seq)
  WHERE deleted_at IS NULL AND status = 'active';
`,
}
