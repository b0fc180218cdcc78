import type { Migration } from './migration.js'

/** Workspaces, API keys, agents, tasks and tools: the spine every other feature hangs off. */
export const migration: Migration = {
  id: '001_core',
  sql: `
CREATE TABLE IF NOT EXISTS workspaces (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL UNIQUE,
  tier TEXT NOT NULL,
  limit_per_hour BIGINT NOT NULL,
  burst_limit BIGINT NOT NULL,
  policy_classes TEXT NOT NULL,
  features TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  identity TEXT NOT NULL,
  scopes TEXT NOT NULL,
  secret_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  revoked_at BIGINT
);
CREATE INDEX IF NOT EXISTS api_keys_workspace ON api_keys (workspace_id);
CREATE TABLE IF NOT EXISTS agents (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  behavior TEXT NOT NULL,
  capabilities TEXT NOT NULL,
  policy_envelope TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  deleted_at BIGINT
);
CREATE INDEX IF NOT EXISTS agents_workspace ON agents (workspace_id, seq);
CREATE TABLE IF NOT EXISTS tasks (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  description TEXT NOT NULL,
  data_source TEXT,
  priority INTEGER NOT NULL,
  status TEXT NOT NULL,
  run_id TEXT,
  result TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_workspace ON tasks (workspace_id, seq);
CREATE INDEX IF NOT EXISTS tasks_run ON tasks (run_id);
CREATE TABLE IF NOT EXISTS tools (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  provider TEXT NOT NULL,
  input_schema TEXT NOT NULL,
  output_schema TEXT NOT NULL,
  policy_binding TEXT NOT NULL,
  idempotent INTEGER NOT NULL,
  config TEXT NOT NULL,
  status TEXT NOT NULL,
  active_name TEXT,
  created_at BIGINT NOT NULL,
  retired_at BIGINT
);
CREATE INDEX IF NOT EXISTS tools_workspace ON tools (workspace_id, seq);
CREATE UNIQUE INDEX IF NOT EXISTS tools_active_name ON tools (workspace_id, active_name);
`,
}
