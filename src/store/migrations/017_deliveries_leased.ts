import type { Migration } from './migration.js'

/**
 * The deliveries an attempt holds a lease on, by subscription: the claim leaves out a subscription whose attempt
 * is in flight on any replica (src/store/repos/deliveries.ts), so its events go out one at a time, in order,
 * however many replicas send. Few rows are leased at once, so the partial index stays small.
 */
export const migration: Migration = {
  id: '017_deliveries_leased',
  sql: `
CREATE INDEX IF NOT EXISTS webhook_deliveries_leased ON webhook_deliveries (webhook_id, lease_until)
  WHERE lease_until IS NOT NULL;
`,
}
