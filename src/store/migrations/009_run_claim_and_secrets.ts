import type { Migration } from './migration.js'

/**
 * The scheduler's claim reads `status IN ('queued', 'running') ... ORDER BY priority DESC, seq` (src/store/repos/
 * runs.ts). The index it had, (status, priority, seq), cannot give that order for two statuses at once, so both
 * stores sorted the whole queue on every claim (SQLite: a temp B-tree, its cost growing with the queue; bench:queue).
 * A partial index over exactly the claimable rows, in exactly the claim's order, is walked from its first entry and
 * stops after the LIMIT: the claim costs the same with 100 or 100,000 queued runs. It holds only live runs, so it stays
 * small however many finished runs the table keeps; the old index goes (no other query leads with status).
 *
 * `server_secrets` holds secrets every replica must share, generated once by whichever starts first: the cursor
 * signing secret when AGENTOPS_CURSOR_SECRET is not set (src/domain/cursor-secret.ts).
 */
export const migration: Migration = {
  id: '009_run_claim_and_secrets',
  sql: `
CREATE INDEX IF NOT EXISTS runs_claim ON runs (priority DESC, seq, lease_until) WHERE status IN ('queued', 'running');
DROP INDEX IF EXISTS runs_runnable;
CREATE TABLE IF NOT EXISTS server_secrets (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
`,
}
