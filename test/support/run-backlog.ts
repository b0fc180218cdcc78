/**
 * A backlog of runs written straight into the store, many rows per statement: copies of one template run with
 * their own ids, in seq order. Used by the claim-plan test and by `npm run bench:queue`, which need 10,000s of
 * queued runs in seconds rather than one POST each.
 */
import type { Db } from '../../src/store/db.js'

const COLUMNS = `workspace_id, agent_id, task_id, status, paused_from, mode, trace_level, inputs, envelope, behavior,
  caller, priority, plan, next_step, in_flight_step, tool_calls, approved, awaiting, results, outcome, frame_count,
  lease_owner, lease_until, created_at, started_at, finished_at, updated_at, steps_completed, steps_escalated`

/**
 * Inserts `count` copies of the run `templateId` with status `status` and ids `<idPrefix><16 digits>` (digits are
 * Crockford base32, so the ids look like any other). The copies keep the template's workspace, agent and priority.
 */
export async function cloneRuns(
  db: Db,
  templateId: string,
  count: number,
  options: { idPrefix: string; status: string; firstNumber?: number },
): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(options.idPrefix)) throw new Error('idPrefix: lower-case letters, digits and _')
  const first = options.firstNumber ?? 1
  const digits =
    db.dialect === 'postgres' ? `lpad(n.i::text, 16, '0')` : `substr('0000000000000000' || n.i, -16)`
  const copied = COLUMNS.replace(/\s+/g, ' ')
    .split(', ')
    .map((c) => (c === 'status' ? `'${options.status.replace(/'/g, "''")}'` : `t.${c}`))
    .join(', ')
  const chunk = 20_000
  for (let from = first; from < first + count; from += chunk) {
    const to = Math.min(first + count, from + chunk) - 1
    await db.run(
      `WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to})
       INSERT INTO runs (id, ${COLUMNS})
       SELECT '${options.idPrefix}' || ${digits}, ${copied} FROM n, runs t WHERE t.id = $1`,
      [templateId],
    )
  }
}
