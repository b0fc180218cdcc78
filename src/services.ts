/**
 * The composition root of the domain: one place that builds every service on one Db and one Clock.
 * Features register themselves here; the HTTP app and the stream only see `Services`.
 */
import type { Config } from './config.js'
import { AgentService } from './domain/agents/service.js'
import type { ChangeFeed } from './domain/changes.js'
import type { Clock } from './domain/clock.js'
import { EventLog } from './domain/events/log.js'
import { IngestionService } from './domain/ingestion/service.js'
import { KeyService } from './domain/keys/service.js'
import { LimitsService } from './domain/limits/service.js'
import type { Ports } from './domain/ports.js'
import { RunExecutor } from './domain/runs/executor.js'
import { RunRecorder } from './domain/runs/recorder.js'
import { RunScheduler } from './domain/runs/scheduler.js'
import { RunService } from './domain/runs/service.js'
import { TaskService } from './domain/tasks/service.js'
import { ToolService } from './domain/tools/service.js'
import { WebhookService } from './domain/webhooks/service.js'
import type { Db } from './store/db.js'
import { openChangeFeed } from './store/notifications.js'
import { KeyRepo } from './store/repos/keys.js'
import { WorkspaceRepo } from './store/repos/workspaces.js'

/** A background worker (scheduler, outbox dispatcher, purger) started and stopped with the server. */
export interface Worker {
  name: string
  start(): void | Promise<void>
  stop(): Promise<void>
}

export interface Services {
  db: Db
  clock: Clock
  config: Config
  ports: Ports
  /** Wake-ups after commits, heard by every replica on the same store (the stream and SSE follow it). */
  changes: ChangeFeed
  /** The durable event log every state change appends to; webhooks and the stream consume it. */
  events: EventLog
  keys: KeyService
  agents: AgentService
  tasks: TaskService
  tools: ToolService
  limits: LimitsService
  /** Connector batches with Merkle lineage; the stream listens to it for new records. */
  ingestion: IngestionService
  runs: RunService
  /** Webhook subscriptions and the signed-delivery outbox fed from the event log. */
  webhooks: WebhookService
  workers: Worker[]
  /** Starts every worker (no-op when config.workers is false). */
  start(): Promise<void>
  /** Stops every worker, then closes nothing else: the caller owns the Db. */
  stop(): Promise<void>
}

export interface ServiceDeps {
  db: Db
  clock: Clock
  config: Config
}

/** Features that plug into the spine (runs, limits, webhooks, ingestion) add themselves through these. */
export type FeatureInstaller = (services: Services) => void | Promise<void>

// --- features: each adds one import at the top and one entry here, in dependency order ---
const FEATURES: FeatureInstaller[] = []

export async function createServices(deps: ServiceDeps): Promise<Services> {
  const { db, clock, config } = deps
  const changes = await openChangeFeed(db)
  const events = new EventLog(db, clock, changes)
  const ports: Ports = { events }
  const recorder = new RunRecorder(db, clock, events, changes)
  const scheduler = new RunScheduler(db, new RunExecutor(recorder, () => config.allowPrivateWebhooks), {
    concurrency: Math.max(1, config.runConcurrency),
    leaseMs: Math.max(100, config.runLeaseMs),
    pollMs: 250,
  })
  const runs = new RunService(db, clock, recorder, () => scheduler.wake())
  ports.runs = runs
  const workers: Worker[] = []
  let started = false
  const services: Services = {
    db,
    clock,
    config,
    ports,
    changes,
    events,
    keys: new KeyService(new KeyRepo(db), new WorkspaceRepo(db), clock),
    agents: new AgentService(db, clock, ports),
    tasks: new TaskService(db, clock, ports),
    tools: new ToolService(db, clock, ports),
    limits: new LimitsService(db, clock),
    ingestion: new IngestionService(db, clock, events, changes),
    runs,
    webhooks: new WebhookService(db, clock, events, {
      allowPrivate: config.allowPrivateWebhooks,
      timeoutMs: Math.max(1, config.webhookTimeoutMs ?? 10_000),
      retry: {
        baseMs: config.webhookRetryBaseMs ?? 5_000,
        maxAttempts: Math.max(1, config.webhookMaxAttempts ?? 8),
      },
      concurrency: config.webhookConcurrency ?? 16,
      pollMs: config.webhookPollMs ?? 1_000,
    }),
    workers,
    async start() {
      if (started || !config.workers) return
      started = true
      for (const w of workers) await w.start()
    },
    async stop() {
      if (!started) return
      started = false
      for (const w of [...workers].reverse()) await w.stop()
    },
  }
  // First in, last out: replicas keep hearing each other until every other worker has stopped.
  workers.push({ name: 'change-feed', start: () => changes.start(), stop: () => changes.stop() })
  workers.push({ name: 'run-scheduler', start: () => scheduler.start(), stop: () => scheduler.stop() })
  workers.push({
    name: 'webhook-outbox',
    start: () => services.webhooks.dispatcher.start(),
    stop: () => services.webhooks.dispatcher.stop(),
  })
  workers.push(intervalWorker('limits-purge', 10 * 60 * 1000, () => services.limits.purge()))
  for (const install of FEATURES) await install(services)
  return services
}

/** A worker that runs `tick` every `everyMs` without keeping the process alive, never overlapping itself. */
export function intervalWorker(name: string, everyMs: number, tick: () => Promise<unknown>): Worker {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> | undefined
  return {
    name,
    start() {
      timer = setInterval(() => {
        if (running) return
        running = tick()
          .catch((err) => console.error(`[${name}]`, err))
          .finally(() => {
            running = undefined
          })
      }, everyMs)
      timer.unref()
    },
    async stop() {
      if (timer) clearInterval(timer)
      await running
    },
  }
}
