import type { Migration } from './migration.js'

/**
 * Ingestion: connectors (created on first ingest, per workspace, holding the last record seq), batches and the
 * stored records with their lineage. Record ids are unique per connector; seq numbers are dense per connector
 * and double as the stream sequence numbers of the `connector:<id>` topic.
 */
export const migration: Migration = {
  id: '005_ingest',
  sql: `
CREATE TABLE IF NOT EXISTS connectors (
  workspace_id TEXT NOT NULL,
  id TEXT NOT NULL,
  last_seq BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, id)
);
CREATE TABLE IF NOT EXISTS ingest_batches (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  connector_id TEXT NOT NULL,
  lineage_root TEXT NOT NULL,
  accepted INTEGER NOT NULL,
  rejected INTEGER NOT NULL,
  first_seq BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS ingest_records (
  workspace_id TEXT NOT NULL,
  connector_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  record_id TEXT NOT NULL,
  ts TEXT NOT NULL,
  source TEXT NOT NULL,
  policy_class TEXT NOT NULL,
  body TEXT NOT NULL,
  batch_id TEXT NOT NULL,
  leaf_index INTEGER NOT NULL,
  batch_size INTEGER NOT NULL,
  batch_root TEXT NOT NULL,
  leaf_hash TEXT NOT NULL,
  ingested_at BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, connector_id, seq),
  UNIQUE (workspace_id, connector_id, record_id)
);
CREATE INDEX IF NOT EXISTS ingest_records_batch ON ingest_records (batch_id, leaf_index);
`,
}
