import type { Migration } from './index.js'

/** The durable event log (consumed by webhooks and the stream) and the runs with their trace frames. */
export const migration: Migration = {
  id: '002_runs',
  sql: `
CREATE TABLE IF NOT EXISTS events (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  ts BIGINT NOT NULL,
  subject_id TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_workspace_seq ON events (workspace_id, seq);
`,
}
