/**
 * Ingest's duplicate check (which of a batch's ids a connector already holds) is judged by the unique index of
 * (workspace_id, connector_id, record_id), whatever the statistics say: on PostgreSQL the batch's insert is the check
 * (its ON CONFLICT arbiter), on SQLite a lookup by the whole key. PostgreSQL's statistics lag behind a connector that
 * grows between two ANALYZE runs; a separate `record_id = ANY($ids)` read was then planned as a walk of the
 * connector's whole key range testing every row against the 500 ids (60-190 ms per batch after a few thousand
 * records, growing with each batch: ingest reached a tenth of its target), and so was a per-id LATERAL probe, which
 * the primary key served with a filter. Here statistics are taken while the table is empty, autovacuum is off, and
 * the connector then holds 20,000 records.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoredRecordRow } from '../../src/domain/ingestion/types.js'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { RecordRepo } from '../../src/store/repos/records.js'
import { backends } from '../support/backends.js'
import { appendRecords } from '../support/record-backlog.js'
import { StatementCapture } from '../support/statement-capture.js'

const WS = 'ws_dup'
const GROWN = 'conn_grown'

/** A batch of the grown connector after its last record, with the given ids. */
function batch(ids: readonly string[]): StoredRecordRow[] {
  return ids.map((id, i) => ({
    workspaceId: WS,
    connectorId: GROWN,
    seq: 1_000_000 + i,
    id,
    ts: '2026-01-01T00:00:00Z',
    source: 'test',
    policyClass: 'internal',
    body: { i },
    batchId: `bat_dup${ids.length}`,
    leafIndex: i,
    batchSize: ids.length,
    batchRoot: '0'.repeat(64),
    leafHash: '0'.repeat(64),
    ingestedAt: 0,
  }))
}

describe.each(backends())('ingest duplicate check on $name', (backend) => {
  let db: Db
  beforeAll(async () => {
    db = await openDb(await backend.freshUrl())
    await migrate(db)
    if (db.dialect === 'postgres')
      await db.exec('ALTER TABLE ingest_records SET (autovacuum_enabled = false)')
    await db.exec('ANALYZE')
    await appendRecords(db, { workspaceId: WS, connectorId: GROWN }, 20_000)
  }, 120_000)
  afterAll(async () => {
    await db?.close()
  })

  it('answers exactly the ids the connector holds, and stores a batch that has none', async () => {
    const repo = new RecordRepo(db, db.dialect)
    const taken = await db.transaction((tx) =>
      repo.in(tx).insertNewRecords(batch(['rec-1', 'rec-20000', 'fresh-1', 'rec-777', 'fresh-2'])),
    )
    expect([...taken].sort()).toEqual(['rec-1', 'rec-20000', 'rec-777'])
    const fresh = batch(['fresh-3', 'fresh-4']).map((r) => ({ ...r, seq: r.seq + 10 }))
    const capture = await db.transaction(async (tx) => {
      const q = new StatementCapture(tx)
      expect(await new RecordRepo(q, db.dialect).insertNewRecords(fresh)).toEqual(new Set())
      return q
    })
    // On PostgreSQL a batch with no taken id is the plain insert alone (after its savepoint): no ON CONFLICT.
    if (db.dialect === 'postgres')
      expect(capture.statements.map((st) => st.sql.trim().split(/\s+/).slice(0, 2).join(' '))).toEqual([
        'SAVEPOINT ingest_records_insert',
        'INSERT INTO',
      ])
    const stored = await db.query<{ record_id: string }>(
      'SELECT record_id FROM ingest_records WHERE workspace_id = $1 AND connector_id = $2 AND seq >= 1000010',
      [WS, GROWN],
    )
    expect(stored.map((r) => r.record_id).sort()).toEqual(['fresh-3', 'fresh-4'])
  })

  it("judges each id of a 500-record batch by the unique index, never by filtering the connector's rows", async () => {
    // Every id taken: nothing is stored, so the statements can be planned again afterwards as they ran.
    const ids = Array.from({ length: 500 }, (_, i) => `rec-${i + 1}`)
    const q = await db.transaction(async (tx) => {
      const capture = new StatementCapture(tx)
      expect([...(await new RecordRepo(capture, db.dialect).insertNewRecords(batch(ids)))].sort()).toEqual(
        [...ids].sort(),
      )
      return capture
    })
    expect(q.statements.length).toBeGreaterThan(0)
    // On PostgreSQL, the plain insert behind a savepoint, refused on the first taken id; back to the savepoint; the
    // insert that skips taken ids.
    if (db.dialect === 'postgres')
      expect(q.statements.map((st) => st.sql.trim().split(/\s+/).slice(0, 3).join(' '))).toEqual([
        'SAVEPOINT ingest_records_insert',
        'INSERT INTO ingest_records',
        'ROLLBACK TO SAVEPOINT',
        'WITH stored AS',
      ])
    for (const statement of q.statements) {
      if (/^\s*(SAVEPOINT|ROLLBACK)/i.test(statement.sql)) continue
      if (db.dialect === 'sqlite') {
        const plan = await db.query<{ detail: string }>(
          `EXPLAIN QUERY PLAN ${statement.sql}`,
          statement.params,
        )
        expect(plan.map((r) => r.detail).join('\n')).toMatch(
          /SEARCH ingest_records USING COVERING INDEX \w+ \(workspace_id=\? AND connector_id=\? AND record_id=\?\)/,
        )
        continue
      }
      const plan = (await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${statement.sql}`, statement.params))
        .map((r) => r['QUERY PLAN'])
        .join('\n')
      const where = `${statement.sql}\n--- plan:\n${plan}`
      // Reading the table is allowed only as a probe of the whole unique key; an insert's arbiter is that probe.
      for (const scan of plan.matchAll(
        /Scan using (\w+) on ingest_records[^\n]*\n\s+Index Cond: ([^\n]*)/g,
      )) {
        expect(scan[1], where).toBe('ingest_records_workspace_id_connector_id_record_id_key')
        expect(scan[2], where).toMatch(/record_id = /)
      }
      expect(plan, where).not.toMatch(/Filter:[^\n]*record_id|Seq Scan on ingest_records/)
      if (/^\s*WITH[\s\S]*INSERT/i.test(statement.sql)) {
        expect(plan, where).toMatch(
          /Conflict Arbiter Indexes: ingest_records_workspace_id_connector_id_record_id_key/,
        )
      }
    }
  })
})
