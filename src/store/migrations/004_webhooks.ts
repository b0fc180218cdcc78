import type { Migration } from './migration.js'

/**
 * Webhook subscriptions and the delivery outbox. A delivery row is the durable promise to send one event to one
 * subscription (unique per pair), so a restart resumes from the rows; the fan-out cursor remembers how far the
 * event log has been turned into rows.
 */
export const migration: Migration = {
  id: '004_webhooks',
  sql: `
CREATE TABLE IF NOT EXISTS webhooks (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secrets TEXT NOT NULL,
  status TEXT NOT NULL,
  after_event_seq BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  secret_rotated_at BIGINT,
  deleted_at BIGINT
);
CREATE INDEX IF NOT EXISTS webhooks_workspace ON webhooks (workspace_id, seq);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  webhook_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_seq BIGINT NOT NULL,
  event_kind TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  last_status_code INTEGER,
  last_error TEXT,
  next_attempt_at BIGINT,
  lease_owner TEXT,
  lease_until BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  delivered_at BIGINT,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
CREATE TABLE IF NOT EXISTS webhook_fanout_cursor (
  name TEXT PRIMARY KEY,
  seq BIGINT NOT NULL
);
`,
}
