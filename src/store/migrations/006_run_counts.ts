import type { Migration } from './migration.js'

/**
 * Plan counts kept on the run row, written in the transaction that appends the frames, so inspecting a run
 * reads one row instead of aggregating its trace. Existing runs are filled in from their frames.
 */
export const migration: Migration = {
  id: '006_run_counts',
  sql: `
ALTER TABLE runs ADD COLUMN steps_completed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN steps_escalated INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET
  steps_completed = (SELECT COUNT(*) FROM run_frames f WHERE f.run_id = runs.id AND f.kind IN ('tool.call', 'step.failed')),
  steps_escalated = (SELECT COUNT(*) FROM run_frames f WHERE f.run_id = runs.id AND f.kind = 'approval.requested');
`,
}
