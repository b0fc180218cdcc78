/**
 * A connector's stored records written straight into the store, many rows per statement, in whole batches of
 * `batchSize` with their batch rows, continuing after the connector's last seq. For tests and benchmarks that need a
 * connector with up to millions of records in seconds, not one ingest call per batch (test/store/hot-query-plans,
 * `npm run bench:growth`). The lineage fields have the right shapes but are not hashes of the records: listing and
 * proof reads cost the same, a verifier would refuse them.
 */
import type { Db } from '../../src/store/db.js'

export async function appendRecords(
  db: Db,
  target: { workspaceId: string; connectorId: string },
  count: number,
  batchSize = 500,
): Promise<void> {
  if (count % batchSize !== 0) throw new Error('count: whole batches only')
  const { workspaceId, connectorId } = target
  const now = Date.UTC(2026, 0, 1)
  const last = await db.one<{ last_seq: number | string }>(
    'SELECT last_seq FROM connectors WHERE workspace_id = $1 AND id = $2',
    [workspaceId, connectorId],
  )
  const first = Number(last?.last_seq ?? 0) + 1
  const hex64 = (v: string) =>
    db.dialect === 'postgres' ? `lpad(to_hex(${v}), 64, '0')` : `printf('%064x', ${v})`
  const batchId = (seq: string) =>
    `'bat_g' || ${db.dialect === 'postgres' ? `lpad(((${seq} - 1) / ${batchSize})::text, 12, '0')` : `substr('000000000000' || ((${seq} - 1) / ${batchSize}), -12)`}`
  const chunk = 50_000 - (50_000 % batchSize)
  for (let from = first; from < first + count; from += chunk) {
    const to = Math.min(first + count, from + chunk) - 1
    const numbers = `WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to})`
    await db.run(
      `${numbers} INSERT INTO ingest_records (workspace_id, connector_id, seq, record_id, ts, source, policy_class,
         body, batch_id, leaf_index, batch_size, batch_root, leaf_hash, ingested_at)
       SELECT $1, $2, i, 'rec-' || i, '2026-01-01T00:00:00Z', 'growth', 'internal', '{"n":' || i || '}', ${batchId('i')},
         (i - 1) % ${batchSize}, ${batchSize}, ${hex64(`(i - 1) / ${batchSize}`)}, ${hex64('i')}, $3
       FROM n`,
      [workspaceId, connectorId, now],
    )
    await db.run(
      `${numbers} INSERT INTO ingest_batches (id, workspace_id, connector_id, lineage_root, accepted, rejected,
         first_seq, created_at)
       SELECT ${batchId('i')}, $1, $2, ${hex64(`(i - 1) / ${batchSize}`)}, ${batchSize}, 0, i, $3
       FROM n WHERE (i - 1) % ${batchSize} = 0`,
      [workspaceId, connectorId, now],
    )
  }
  await db.run(
    `INSERT INTO connectors (workspace_id, id, last_seq, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT (workspace_id, id) DO UPDATE SET last_seq = excluded.last_seq`,
    [workspaceId, connectorId, first + count - 1, now],
  )
}
