import type { Migration } from './migration.js'

/**
 * The Slack click signatures seen lately, shared by every replica (src/store/repos/slack-signatures.ts): a click
 * replayed to another replica than the one it first reached is refused like one replayed to the same.
 */
export const migration: Migration = {
  id: '016_slack_signatures_seen',
  sql: `
CREATE TABLE IF NOT EXISTS slack_signatures_seen (
  signature TEXT PRIMARY KEY,
  seen_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS slack_signatures_seen_at ON slack_signatures_seen (seen_at);
`,
}
