import type { Migration } from './migration.js'

/**
 * The replica holding each open stream connection (`stream_sockets`, 013): it renews its rows' leases in one
 * statement and removes them all when it shuts down (src/store/repos/stream-sockets.ts).
 */
export const migration: Migration = {
  id: '014_stream_socket_replicas',
  sql: `
ALTER TABLE stream_sockets ADD COLUMN replica_id TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS stream_sockets_replica ON stream_sockets (replica_id);
`,
}
