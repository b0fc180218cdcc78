import type { Migration } from './migration.js'

/** Idempotency records and rate-limit counters: in the store so every replica shares them. */
export const migration: Migration = {
  id: '003_limits',
  sql: `
CREATE TABLE IF NOT EXISTS idempotency_keys (
  workspace_id TEXT NOT NULL,
  idem_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL,
  status INTEGER,
  headers TEXT,
  body TEXT,
  locked_until BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, idem_key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (expires_at);
CREATE TABLE IF NOT EXISTS rate_counters (
  workspace_id TEXT NOT NULL,
  window_name TEXT NOT NULL,
  window_start BIGINT NOT NULL,
  count BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, window_name, window_start)
);
CREATE INDEX IF NOT EXISTS rate_counters_start ON rate_counters (window_start);
`,
}
