/**
 * A bench's store, seeded before its server starts: migrated, then handed with the domain services on it (no
 * workers) and a key of a workspace whose quota no bench reaches (so 429s never distort a figure) to `seed`. The
 * wake-ups of the seeding writes leave before the store is closed.
 */
import { loadConfig } from '../../src/config.js'
import { systemClock } from '../../src/domain/clock.js'
import type { IssuedKey } from '../../src/domain/keys/service.js'
import type { RunService } from '../../src/domain/runs/service.js'
import { createServices, type Services } from '../../src/services.js'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'

export async function seedStore<T>(
  databaseUrl: string,
  workspace: string,
  seed: (services: Services, key: IssuedKey, db: Db) => Promise<T>,
): Promise<T> {
  const db = await openDb(databaseUrl)
  try {
    await migrate(db)
    const services = createServices({
      db,
      clock: systemClock,
      config: loadConfig({}, { databaseUrl, workers: false }),
    })
    const key = await services.keyAdmin.issue({
      workspace,
      tier: 'enterprise',
      limitPerHour: 1e9,
      burstLimit: 1e9,
      // The fan-out bench opens a thousand sockets with this one key.
      quotas: { stream_sockets_per_key: 100_000, stream_subscriptions_per_key: 1_000_000 },
    })
    const seeded = await seed(services, key, db)
    await services.changes.flush()
    return seeded
  } finally {
    await db.close()
  }
}

/** Starts a run of the agent (no input) as the key's caller. */
export async function startRun(runs: RunService, key: IssuedKey, agentId: string): Promise<string> {
  const { run } = await runs.start(
    key.workspace_id,
    agentId,
    {},
    { keyId: key.key_id, identity: key.identity, scopes: key.scopes },
  )
  return run.id
}
