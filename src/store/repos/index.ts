import type { AgentRepository } from '../../domain/agents/ports.js'
import type { EventRepository } from '../../domain/events/ports.js'
import type { IdempotencyRepository } from '../../domain/idempotency/ports.js'
import type { RecordRepository } from '../../domain/ingestion/ports.js'
import type { KeyRepository, WorkspaceRepository } from '../../domain/keys/ports.js'
import type { RateCounterRepository } from '../../domain/limits/ports.js'
import type { Db } from '../../domain/ports.js'
import type { QuotaUsageRepository, StreamSocketRepository } from '../../domain/quotas/ports.js'
import type { RunRepository } from '../../domain/runs/ports.js'
import type { TaskRepository } from '../../domain/tasks/ports.js'
import type { ToolRepository } from '../../domain/tools/ports.js'
import type { DeliveryRepository, WebhookRepository } from '../../domain/webhooks/ports.js'
import { hotPath } from '../db.js'
import { AgentRepo } from './agents.js'
import { DeliveryRepo } from './deliveries.js'
import { EventRepo } from './events.js'
import { IdempotencyRepo } from './idempotency.js'
import { KeyRepo } from './keys.js'
import { QuotaUsageRepo } from './quota-usage.js'
import { MemoryRateCounters, RateCounterRepo } from './rate-counters.js'
import { RecordRepo } from './records.js'
import { CachedRunRepo } from './run-cache.js'
import { RunRepo } from './runs.js'
import { StreamSocketRepo } from './stream-sockets.js'
import { TaskRepo } from './tasks.js'
import { ToolRepo } from './tools.js'
import { WebhookRepo } from './webhooks.js'
import { WorkspaceRepo } from './workspaces.js'

/** Every repository, each implementing its feature's port, built once on one Db (`createRepositories`). */
export interface Repositories {
  workspaces: WorkspaceRepository
  keys: KeyRepository
  agents: AgentRepository
  tools: ToolRepository
  tasks: TaskRepository
  runs: RunRepository
  events: EventRepository
  records: RecordRepository
  webhooks: WebhookRepository
  deliveries: DeliveryRepository
  idempotency: IdempotencyRepository
  rateCounters: RateCounterRepository
  /** What each workspace uses of each quota, counted in the writes' transactions. */
  quotaUsage: QuotaUsageRepository
  /** The open stream connections of every replica, counted per key. */
  streamSockets: StreamSocketRepository
}

/** Every repository bound to one Db: what the composition root hands to the domain services. */
export function createRepositories(db: Db): Repositories {
  // Lock-free single statements of the request path; pipelined on PostgreSQL, the same Db on SQLite.
  const hot = hotPath(db)
  const sharedCounters = db.dialect === 'postgres' ? new RateCounterRepo(hot, db) : undefined
  return {
    workspaces: new WorkspaceRepo(db),
    keys: new KeyRepo(db),
    agents: new AgentRepo(db),
    tools: new ToolRepo(db),
    tasks: new TaskRepo(db),
    // Runs read by id come from memory on the embedded store (its one writer is this server); on PostgreSQL, where
    // another replica may have written them, from memory once the row's version says they are still current.
    runs:
      db.dialect === 'sqlite'
        ? new CachedRunRepo(new RunRepo(db, 'sqlite'), 'sole-writer', () => db.inUnitOfWork())
        : new CachedRunRepo(
            new RunRepo(db, 'postgres', hot),
            'versioned',
            () => db.inUnitOfWork(),
            // A cached GET's version confirmation rides with its workspace's rate count when that count waits.
            (workspaceId, runId) => sharedCounters?.ride(workspaceId, runId),
          ),
    events: new EventRepo(db, db.dialect),
    records: new RecordRepo(db, db.dialect),
    webhooks: new WebhookRepo(db, hot),
    deliveries: new DeliveryRepo(db),
    // A key's claim is its request's unit of work (src/domain/idempotency/service.ts); only answers are rows.
    idempotency: new IdempotencyRepo(db, db.dialect),
    // The embedded store has one writer (this server), so rate counts live in memory there; on PostgreSQL they are
    // rows every replica shares.
    rateCounters: sharedCounters ?? new MemoryRateCounters(db),
    quotaUsage: new QuotaUsageRepo(db),
    streamSockets: new StreamSocketRepo(db),
  }
}
