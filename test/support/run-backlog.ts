/**
 * A backlog of runs written straight into the store, many rows per statement: copies of one template run with
 * their own ids, in seq order, optionally with copies of its trace. Used by the plan test and by `npm run
 * bench:queue` and `bench:growth`, which need 10,000s of runs in seconds rather than one POST each.
 */
import type { Db } from '../../src/store/db.js'

const FRAME_COLUMNS = 'seq, ts, step_id, kind, tool, tool_id, policy, latency_ms, result, detail'

const COLUMNS = `workspace_id, agent_id, task_id, status, paused_from, mode, trace_level, inputs, envelope, behavior,
  caller, priority, plan, next_step, in_flight_step, tool_calls, approved, awaiting, results, outcome, frame_count,
  lease_owner, lease_until, created_at, started_at, finished_at, updated_at, steps_completed, steps_escalated`

/**
 * Inserts `count` copies of the run `templateId` with status `status` and ids `<idPrefix><16 digits>` (digits are
 * Crockford base32, so the ids look like any other). The copies keep the template's workspace, agent and priority.
 * `withFrames`: each copy also gets a copy of the template's trace frames (the run rows keep its frame counts).
 */
export async function cloneRuns(
  db: Db,
  templateId: string,
  count: number,
  options: { idPrefix: string; status: string; firstNumber?: number; withFrames?: boolean },
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
    const numbers = `WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to})`
    await db.run(
      `${numbers} INSERT INTO runs (id, ${COLUMNS})
       SELECT '${options.idPrefix}' || ${digits}, ${copied} FROM n, runs t WHERE t.id = $1`,
      [templateId],
    )
    if (options.withFrames) {
      const frameColumns = FRAME_COLUMNS.split(', ').map((c) => `f.${c}`)
      await db.run(
        `${numbers} INSERT INTO run_frames (run_id, ${FRAME_COLUMNS})
         SELECT '${options.idPrefix}' || ${digits}, ${frameColumns.join(', ')} FROM n, run_frames f
         WHERE f.run_id = $1`,
        [templateId],
      )
    }
  }
}
