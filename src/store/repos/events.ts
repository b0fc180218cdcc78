import type { EventRepository } from '../../domain/events/ports.js'
import type { EventRow } from '../../domain/events/types.js'
import { commitTailOf, type Dialect, fromJson, type InOneStatement, type Queryable, toJson } from '../db.js'

interface RawEvent extends Record<string, unknown> {
  seq: number | string
  id: string
  workspace_id: string
  kind: string
  ts: number | string
  subject_id: string
  data: string
}

function toEvent(r: RawEvent): EventRow {
  return {
    seq: Number(r.seq),
    id: r.id,
    workspaceId: r.workspace_id,
    kind: r.kind,
    ts: Number(r.ts),
    subjectId: r.subject_id,
    data: fromJson<Record<string, unknown>>(r.data),
  }
}

// Any constant works: it only has to be the same for every appender.
const APPEND_LOCK = 7_140_001

const INSERT = `INSERT INTO events (id, workspace_id, kind, ts, subject_id, data)
  VALUES ($1, $2, $3, $4, $5, $6)`

// The lock and the insert in one statement. The MATERIALIZED CTE is scanned before the row it yields reaches the
// insert, so the lock is held before nextval() hands out the seq, as a separate `SELECT pg_advisory_xact_lock` would.
const lockedInsert = (
  from: string,
) => `WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock(${APPEND_LOCK})${from})
INSERT INTO events (id, workspace_id, kind, ts, subject_id, data)
  SELECT $1::text, $2::text, $3::text, $4::bigint, $5::text, $6::text FROM held`
const LOCKED_INSERT = lockedInsert('')

/**
 * LOCKED_INSERT in a unit sent as one statement (src/store/ordered-statement.ts): the append lock is taken only
 * once the unit's last count has run, as it is when the statements go one after another.
 */
const LOCKED_INSERT_IN_ORDER: InOneStatement = {
  after: (after) =>
    after === null ? LOCKED_INSERT : lockedInsert(` FROM (SELECT count(*) FROM ${after}) AS counted`),
}

export class EventRepo implements EventRepository {
  constructor(
    private readonly db: Queryable,
    private readonly dialect: Dialect,
  ) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): EventRepo {
    return new EventRepo(tx, this.dialect)
  }

  /**
   * Appends one event. On PostgreSQL the append takes an advisory lock that its transaction holds until it ends,
   * so that sequence order equals commit order; otherwise a reader polling "after seq N" could skip an event whose
   * transaction committed late. The append goes out with the COMMIT (`CommitTail`), so the lock serialises
   * commits only, not whole transactions' tails. SQLite serialises transactions itself.
   */
  async append(e: Omit<EventRow, 'seq'>): Promise<void> {
    const values = [e.id, e.workspaceId, e.kind, e.ts, e.subjectId, toJson(e.data)]
    if (this.dialect === 'sqlite') {
      await this.db.run(INSERT, values)
      return
    }
    const tail = commitTailOf(this.db)
    if (tail) tail.atCommit(LOCKED_INSERT, values, LOCKED_INSERT_IN_ORDER)
    else await this.db.run(LOCKED_INSERT, values)
  }

  async after(seq: number, limit: number): Promise<EventRow[]> {
    const rows = await this.db.query<RawEvent>('SELECT * FROM events WHERE seq > $1 ORDER BY seq LIMIT $2', [
      seq,
      limit,
    ])
    return rows.map(toEvent)
  }

  async afterInWorkspace(workspaceId: string, seq: number, limit: number): Promise<EventRow[]> {
    const rows = await this.db.query<RawEvent>(
      'SELECT * FROM events WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
      [workspaceId, seq, limit],
    )
    return rows.map(toEvent)
  }

  async lastSeq(): Promise<number> {
    const row = await this.db.one<{ m: number | string | null }>('SELECT MAX(seq) AS m FROM events')
    return Number(row?.m ?? 0)
  }
}
