import type { Migration } from './migration.js'

/** The durable event log (consumed by webhooks and the stream) and the runs with their trace frames. */
export const migration: Migration = {
  id: '002_runs',
  sql: `
CREATE TABLE IF NOT EXISTS events (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  ts BIGINT NOT NULL,
  subject_id TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_workspace_seq ON events (workspace_id, seq);
CREATE TABLE IF NOT EXISTS runs (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  task_id TEXT,
  status TEXT NOT NULL,
  paused_from TEXT,
  mode TEXT NOT NULL,
  trace_level TEXT NOT NULL,
  inputs TEXT NOT NULL,
  envelope TEXT NOT NULL,
  behavior TEXT NOT NULL,
  caller TEXT NOT NULL,
  priority INTEGER NOT NULL,
  plan TEXT NOT NULL,
  next_step INTEGER NOT NULL,
  in_flight_step INTEGER,
  tool_calls INTEGER NOT NULL,
  approved TEXT NOT NULL,
  awaiting TEXT NOT NULL,
  results TEXT NOT NULL,
  outcome TEXT,
  frame_count INTEGER NOT NULL,
  lease_owner TEXT,
  lease_until BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  finished_at BIGINT,
  updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_agent ON runs (workspace_id, agent_id, seq);
CREATE INDEX IF NOT EXISTS runs_runnable ON runs (status, priority, seq);
CREATE TABLE IF NOT EXISTS run_frames (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  ts BIGINT NOT NULL,
  step_id TEXT,
  kind TEXT NOT NULL,
  tool TEXT,
  tool_id TEXT,
  policy TEXT,
  latency_ms INTEGER,
  result TEXT,
  detail TEXT,
  PRIMARY KEY (run_id, seq)
);
`,
}
