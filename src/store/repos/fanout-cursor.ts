import type { Queryable } from '../db.js'

/** How far a channel's fan-out has turned the event log into outbox rows (0 before its first batch). */
export async function readFanoutCursor(db: Queryable, name: string): Promise<number> {
  const row = await db.one<{ seq: number | string }>(
    'SELECT seq FROM webhook_fanout_cursor WHERE name = $1',
    [name],
  )
  return row ? Number(row.seq) : 0
}

/** Moves a fan-out cursor forward only, so two replicas fanning out at once never move it back. */
export async function advanceFanoutCursor(db: Queryable, name: string, seq: number): Promise<void> {
  await db.run(
    `INSERT INTO webhook_fanout_cursor (name, seq) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET seq = CASE WHEN webhook_fanout_cursor.seq < excluded.seq
       THEN excluded.seq ELSE webhook_fanout_cursor.seq END`,
    [name, seq],
  )
}
