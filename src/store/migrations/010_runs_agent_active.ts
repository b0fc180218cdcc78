import type { Migration } from './migration.js'

/**
 * An agent's live runs, counted for every agent page (`active_runs`, src/store/repos/runs.ts countActiveByAgents)
 * and listed when an agent is deleted (activeIdsByAgent). Through runs_agent those queries read every run the agent
 * ever had, and its row for the status: with 100,000 finished runs, 100,000 row reads per agent on a page. This
 * partial index holds only the runs in a live status, so both read as many entries as the agent has live runs,
 * however many it finished. Its predicate is the queries' status list, word for word (SQLite uses a partial index
 * only when the query's WHERE repeats the index's); change them together (test/store/hot-query-plans.test.ts).
 */
export const migration: Migration = {
  id: '010_runs_agent_active',
  sql: `
CREATE INDEX IF NOT EXISTS runs_agent_active ON runs (workspace_id, agent_id, seq)
  WHERE status IN ('queued', 'running', 'awaiting_approval', 'paused');
`,
}
