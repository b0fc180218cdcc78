import type { Migration } from './migration.js'

/**
 * Ingest writes one row per record into every index of ingest_records; the batch_id index served only to find a
 * batch's leaves, which its ingest_batches row already locates (connector and seq range, read through the primary
 * key). Dropping it removes one B-tree insert per ingested record.
 */
export const migration: Migration = {
  id: '007_ingest_batch_index',
  sql: `
DROP INDEX IF EXISTS ingest_records_batch;
`,
}
