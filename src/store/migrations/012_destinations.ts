import type { Migration } from './migration.js'

/**
 * Destinations (chat, paging, CloudEvents sinks, NATS JetStream), per workspace beside webhook subscriptions. They
 * share the delivery outbox: a row's `channel` says which dispatcher sends it, so both keep one row per (target,
 * event), the same leases, retries and log. `secrets` holds the write-only credentials, never answered.
 */
export const migration: Migration = {
  id: '012_destinations',
  sql: `
CREATE TABLE IF NOT EXISTS destinations (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  type TEXT NOT NULL,
  name TEXT NOT NULL,
  events TEXT NOT NULL,
  agent_ids TEXT,
  config TEXT NOT NULL,
  secrets TEXT NOT NULL,
  status TEXT NOT NULL,
  after_event_seq BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  deleted_at BIGINT
);
CREATE INDEX IF NOT EXISTS destinations_workspace ON destinations (workspace_id, seq);
ALTER TABLE webhook_deliveries ADD COLUMN channel TEXT NOT NULL DEFAULT 'webhook';
`,
}
