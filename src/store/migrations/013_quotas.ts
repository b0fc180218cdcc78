import type { Migration } from './migration.js'

/**
 * Quotas (src/domain/quotas): each workspace's own settings (`workspaces.quotas`, JSON over its tier's defaults), and
 * what it uses of each, one row per (workspace, quota, scope), counted in the transaction of the write that grows or
 * shrinks it. The counts of what exists already are taken here. A stored Idempotency-Key answer keeps the bytes it
 * was counted for (`answer_bytes`), so the row's removal gives back exactly those; older rows count their text.
 * `stream_sockets` holds the open stream connections of every replica (a lease renewed by the heartbeat), so a
 * key's connections and topics are counted across replicas and a crashed replica's expire.
 */
export const migration: Migration = {
  id: '013_quotas',
  sql: `
ALTER TABLE workspaces ADD COLUMN quotas TEXT NOT NULL DEFAULT '{}';
ALTER TABLE idempotency_keys ADD COLUMN answer_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE idempotency_keys SET answer_bytes = COALESCE(LENGTH(body), 0) + COALESCE(LENGTH(headers), 0) + LENGTH(idem_key) + 64;
CREATE TABLE IF NOT EXISTS quota_usage (
  workspace_id TEXT NOT NULL,
  quota TEXT NOT NULL,
  scope TEXT NOT NULL,
  used BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, quota, scope)
);
INSERT INTO quota_usage (workspace_id, quota, scope, used)
  SELECT workspace_id, 'agents', '', COUNT(*) FROM agents WHERE deleted_at IS NULL GROUP BY workspace_id;
INSERT INTO quota_usage (workspace_id, quota, scope, used)
  SELECT workspace_id, 'tools', '', COUNT(*) FROM tools WHERE status <> 'retired' GROUP BY workspace_id;
INSERT INTO quota_usage (workspace_id, quota, scope, used)
  SELECT workspace_id, 'webhooks', '', COUNT(*) FROM webhooks WHERE deleted_at IS NULL GROUP BY workspace_id;
INSERT INTO quota_usage (workspace_id, quota, scope, used)
  SELECT workspace_id, 'destinations', '', COUNT(*) FROM destinations WHERE deleted_at IS NULL GROUP BY workspace_id;
INSERT INTO quota_usage (workspace_id, quota, scope, used)
  SELECT workspace_id, 'records_per_connector', connector_id, COUNT(*) FROM ingest_records
  GROUP BY workspace_id, connector_id;
INSERT INTO quota_usage (workspace_id, quota, scope, used)
  SELECT workspace_id, 'idempotency_keys', '', COUNT(*) FROM idempotency_keys GROUP BY workspace_id;
INSERT INTO quota_usage (workspace_id, quota, scope, used)
  SELECT workspace_id, 'idempotency_bytes', '', SUM(answer_bytes) FROM idempotency_keys GROUP BY workspace_id;
CREATE TABLE IF NOT EXISTS stream_sockets (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  subscriptions BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS stream_sockets_key ON stream_sockets (key_id, expires_at);
`,
}
