/**
 * The composition root of the domain: `createDomain` builds the repositories on one Db and hands them, with one
 * Clock and the outbound port, to every service; `createWorkers` drives them in the background; `createServices`
 * puts both together for the server, the transports and the CLI.
 */

import type { Config } from './config.js'
import { AgentService } from './domain/agents/service.js'
import type { ChangeFeed } from './domain/changes.js'
import type { Clock } from './domain/clock.js'
import type { DestinationTransports } from './domain/destinations/ports.js'
import { DestinationService } from './domain/destinations/service.js'
import { SlackInteractionService } from './domain/destinations/slack-interactions.js'
import { EventLog } from './domain/events/log.js'
import { IdempotencyService } from './domain/idempotency/service.js'
import { IngestionService } from './domain/ingestion/service.js'
import { KeyAdministration } from './domain/keys/administration.js'
import { KeyService } from './domain/keys/service.js'
import { LimitsService } from './domain/limits/service.js'
import type { OutboundHttp } from './domain/outbound.js'
import type { Db } from './domain/ports.js'
import { QuotaService } from './domain/quotas/service.js'
import { StreamSocketQuotas } from './domain/quotas/stream-sockets.js'
import { RunExecutor } from './domain/runs/executor.js'
import { RunRecorder } from './domain/runs/recorder.js'
import { RunScheduler } from './domain/runs/scheduler.js'
import { RunService } from './domain/runs/service.js'
import { TaskService } from './domain/tasks/service.js'
import { ToolService } from './domain/tools/service.js'
import { WebhookService } from './domain/webhooks/service.js'
import { type Logger, leaseLog, SILENT_LOGGER } from './observability/logger.js'
import type { Metrics } from './observability/metrics.js'
import { createDestinationTransports } from './outbound/destinations/index.js'
import { slackResponder } from './outbound/destinations/slack-responder.js'
import { createOutboundPorts } from './outbound/http.js'
import type { OutboundPurpose } from './outbound/private-targets.js'
import { openChangeFeed } from './store/notifications.js'
import { createDestinationRepositories } from './store/repos/destinations.js'
import type { Repositories } from './store/repos/index.js'
import { createRepositories } from './store/repos/index.js'
import { TopicFeeds } from './surface/topic-feeds.js'

/** A background worker (scheduler, outbox dispatcher, purger) started and stopped with the server. */
export interface Worker {
  name: string
  start(): void | Promise<void>
  stop(): Promise<void>
}

/** The domain services, built once on one Db and one Clock (`createDomain`). */
export interface Domain {
  /** Wake-ups after commits, heard by every replica on the same store (the stream and SSE follow it). */
  changes: ChangeFeed
  /** The durable event log every state change appends to; webhooks and the stream consume it. */
  events: EventLog
  keys: KeyService
  /** Issuing, listing and revoking keys, creating and configuring workspaces: the operator's, never a request's. */
  keyAdmin: KeyAdministration
  agents: AgentService
  tasks: TaskService
  tools: ToolService
  /** Rate limits per workspace. */
  limits: LimitsService
  /** Quotas on everything a workspace can grow, counted in the store (src/domain/quotas). */
  quotas: QuotaService
  /** Open stream connections and their topics per key, counted across replicas (src/domain/quotas). */
  streamSockets: StreamSocketQuotas
  /** Idempotency-Key requests: each key's work at most once, its answer replayed. */
  idempotency: IdempotencyService
  /** Connector batches with Merkle lineage; the stream listens to it for new records. */
  ingestion: IngestionService
  runs: RunService
  /** Webhook subscriptions and the signed-delivery outbox fed from the event log. */
  webhooks: WebhookService
  /** Chat, paging, CloudEvents and event-bus destinations, delivered through the same outbox as webhooks. */
  destinations: DestinationService
  /** Approve and Deny clicks from Slack approval messages, verified with the destination's signing secret. */
  slackInteractions: SlackInteractionService
  /** Claims and advances queued runs; a worker (`createWorkers`) drives it. */
  scheduler: RunScheduler
}

/** What the transports receive: the domain, the handles it runs on and its workers' lifecycle. */
export interface Services extends Domain {
  db: Db
  clock: Clock
  config: Config
  logger: Logger
  /** Prometheus instruments; absent when metrics are turned off (AGENTOPS_METRICS=off). */
  metrics: Metrics | undefined
  /**
   * The shared readers of stream topics in this process, woken by the change feed: one read per topic per change,
   * handed to every /v1/stream and GraphQL subscriber of the topic.
   */
  topicFeeds: TopicFeeds
  workers: Worker[]
  /** Starts every worker (no-op when config.workers is false). */
  start(): Promise<void>
  /** Stops every worker, then closes nothing else: the caller owns the Db. */
  stop(): Promise<void>
}

export interface DomainDeps {
  db: Db
  clock: Clock
  config: Config
  /**
   * The ways out (src/outbound), one per purpose so each has its own private targets: webhook deliveries, event
   * destinations, and the `http` tool provider.
   */
  outbound: Record<OutboundPurpose, OutboundHttp>
  logger?: Logger
  /** Run, webhook and LISTEN telemetry; absent: nothing is measured. */
  metrics?: Metrics
  /** How each destination type is reached; default: src/outbound/destinations on `outbound`. */
  destinationTransports?: DestinationTransports
}

/** Builds the repositories on one Db and hands them, with one Clock, to every domain service. */
export function createDomain(deps: DomainDeps): Domain {
  const { db, clock, config, outbound, metrics } = deps
  const logger = deps.logger ?? SILENT_LOGGER
  const repos: Repositories = createRepositories(db)
  const changes = openChangeFeed(db, {
    ...(metrics ? { onReconnected: () => metrics.store.listenReconnected() } : {}),
    log: { warn: (message) => logger.warn(message), info: (message) => logger.info(message) },
    failures: logger,
  })
  const events = new EventLog(repos.events, clock, changes)
  const recorder = new RunRecorder(db, repos.runs, clock, events, changes, metrics?.runs)
  const executor = new RunExecutor(recorder, repos.tools, outbound.tools)
  const leases = leaseLog(logger)
  const scheduler = new RunScheduler(repos.runs, executor, {
    concurrency: Math.max(1, config.runConcurrency),
    leaseMs: Math.max(100, config.runLeaseMs),
    pollMs: Math.max(1, config.runPollMs),
    leases,
    failures: logger,
  })
  // A run started inside a unit of work (a keyed POST) is claimable once the unit committed, and the scheduler's
  // pass must not run in the request's transaction.
  const runs = new RunService(repos, clock, recorder, () => db.afterCommit(() => scheduler.wake()))
  const destinationRepos = createDestinationRepositories(db)
  const outboxSettings = {
    timeoutMs: Math.max(1, config.webhookTimeoutMs),
    retry: { baseMs: config.webhookRetryBaseMs, maxAttempts: Math.max(1, config.webhookMaxAttempts) },
    concurrency: Math.max(1, config.webhookConcurrency),
    pollMs: config.webhookPollMs,
    leases,
    failures: logger,
  }
  const quotas = new QuotaService(
    repos.quotaUsage,
    repos.workspaces,
    clock,
    { stream_subscriptions_per_socket: config.streamMaxSubscriptions },
    metrics?.quotas,
  )
  const keys = new KeyService(repos.keys, repos.workspaces, clock, {}, changes, config.keyWatchPollMs, logger)
  return {
    changes,
    events,
    quotas,
    streamSockets: new StreamSocketQuotas(repos.streamSockets, quotas, clock, logger),
    keys,
    keyAdmin: new KeyAdministration(repos.keys, repos.workspaces, clock, changes, keys.cache, keys.watch),
    agents: new AgentService(db, repos.agents, repos.runs, clock, events, runs, quotas),
    tasks: new TaskService(db, repos.tasks, repos.agents, clock, events, runs),
    tools: new ToolService(db, repos.tools, clock, events, quotas),
    limits: new LimitsService(repos.rateCounters, clock),
    idempotency: new IdempotencyService(db, repos.idempotency, clock, quotas),
    ingestion: new IngestionService(db, repos.records, clock, events, quotas, changes),
    runs,
    webhooks: new WebhookService(db, repos.webhooks, repos.deliveries, clock, events, {
      ...outboxSettings,
      outbound: outbound.webhooks,
      quotas,
      ...(metrics ? { telemetry: metrics.webhooks } : {}),
    }),
    destinations: new DestinationService(
      db,
      destinationRepos.destinations,
      destinationRepos.deliveries,
      clock,
      events,
      {
        ...outboxSettings,
        outbound: outbound.destinations,
        quotas,
        transports:
          deps.destinationTransports ??
          createDestinationTransports(outbound.destinations, { publicUrl: config.publicUrl }),
        ...(metrics ? { telemetry: metrics.destinations } : {}),
      },
    ),
    slackInteractions: new SlackInteractionService({
      destinations: destinationRepos.destinations,
      signatures: destinationRepos.slackSignatures,
      runs,
      responder: slackResponder(outbound.destinations, logger),
      clock,
      log: logger,
    }),
    scheduler,
  }
}

/**
 * The background workers, in start order: first in, last out, so replicas keep hearing each other (the change
 * feed) until every other worker has stopped.
 */
export function createWorkers(
  domain: Pick<Domain, 'changes' | 'scheduler' | 'webhooks' | 'destinations' | 'limits' | 'idempotency'>,
  logger: Logger = SILENT_LOGGER,
): Worker[] {
  const { changes, scheduler, webhooks, destinations, limits, idempotency } = domain
  const flush = intervalWorker('rate-counters-flush', 1000, () => limits.flushCounters(), logger)
  return [
    { name: 'change-feed', start: () => changes.start(), stop: () => changes.stop() },
    { name: 'run-scheduler', start: () => scheduler.start(), stop: () => scheduler.stop() },
    {
      name: 'webhook-outbox',
      start: () => webhooks.dispatcher.start(),
      stop: () => webhooks.dispatcher.stop(),
    },
    {
      name: 'destination-outbox',
      start: () => destinations.dispatcher.start(),
      stop: () => destinations.stop(),
    },
    // Expired idempotency answers, then counters of windows long gone.
    intervalWorker(
      'limits-purge',
      10 * 60 * 1000,
      async () => ({ ...(await idempotency.purge()), ...(await limits.purge()) }),
      logger,
    ),
    // In-memory rate counts (SQLite) reach the store every second and once more when the server stops.
    {
      ...flush,
      async stop() {
        await flush.stop()
        await limits.flushCounters()
      },
    },
  ]
}

export interface ServiceDeps {
  db: Db
  clock: Clock
  config: Config
  logger?: Logger
  metrics?: Metrics
}

/** The composition root: the outbound port, the domain on it, and the workers that drive the domain. */
export function createServices(deps: ServiceDeps): Services {
  const { db, clock, config, metrics } = deps
  const logger = deps.logger ?? SILENT_LOGGER
  const outbound = createOutboundPorts(config.privateTargets, config.outboundResolve)
  const domain = createDomain({ db, clock, config, outbound, logger, ...(metrics ? { metrics } : {}) })
  const workers = createWorkers(domain, logger)
  const topicFeeds = new TopicFeeds()
  topicFeeds.follow(domain.changes)
  let started = false
  return {
    ...domain,
    db,
    clock,
    config,
    logger,
    metrics,
    topicFeeds,
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
}

/** A worker that runs `tick` every `everyMs` without keeping the process alive, never overlapping itself. */
export function intervalWorker(
  name: string,
  everyMs: number,
  tick: () => Promise<unknown>,
  logger: Logger = SILENT_LOGGER,
): Worker {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> | undefined
  return {
    name,
    start() {
      timer = setInterval(() => {
        if (running) return
        running = tick()
          .catch((err: unknown) => logger.error({ err, worker: name }, 'worker tick failed'))
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
