import type { Migration } from './migration.js'

/**
 * The burst window's length, per workspace (`Workspace.burstWindowSeconds`): the operator sets it with
 * `--burst-window-seconds`; every workspace stored before keeps the 10 s window it had.
 */
export const migration: Migration = {
  id: '015_burst_window',
  sql: `
ALTER TABLE workspaces ADD COLUMN burst_window_seconds BIGINT NOT NULL DEFAULT 10;
`,
}
