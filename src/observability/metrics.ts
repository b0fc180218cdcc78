/**
 * The server's Prometheus metrics (prom-client): one registry per server, the process's Node metrics in one
 * registry per process (they describe the process, whichever servers it runs), merged when scraped.
 *
 * Hot-path rule: a request never builds a label object. Every labelled series a request touches is a prom-client
 * child bound once (per route template × method × status class) and cached here; gauges that describe state
 * (in flight, open sockets, queue depth) are read when Prometheus scrapes, not kept up to date per request.
 * No label value ever comes from a client or a tenant: routes are templates, everything else a fixed vocabulary.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { DestinationTelemetry } from '../domain/destinations/ports.js'
import { DESTINATION_TYPES, type DestinationType } from '../domain/destinations/types.js'
import type { Tier } from '../domain/identity.js'
import type { QuotaTelemetry } from '../domain/quotas/ports.js'
import { QUOTA_NAMES, type QuotaName } from '../domain/quotas/types.js'
import type { RunTelemetry } from '../domain/runs/ports.js'
import type { FrameRecord, RunRecord, RunStatus } from '../domain/runs/types.js'
import type { DeliveryAttemptOutcome, StoreGauges, WebhookTelemetry } from '../domain/telemetry.js'

/** Latency buckets in seconds: from a cached read (about a millisecond) to a slow store (seconds). */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** A statement: from a pipelined read (a tenth of a millisecond) to one waiting on a lock. */
const STATEMENT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5]
/** Run-level durations: a dry run takes milliseconds, a run waiting on approval may take hours. */
const RUN_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14_400]

export const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const

export type SocketTransport = 'stream' | 'graphql'
export type IdempotencyAnswer = 'replayed' | 'conflict' | 'in_progress'
export type ValueSource = () => Promise<void> | void

interface ObserveChild {
  observe(value: number): void
}
interface IncChild {
  inc(value?: number): void
}

/** A counter's series for a fixed label value, shown as 0 from the start so `rate()` and alerts see it at once. */
function zeroed<L extends string>(counter: Counter<L>, ...values: string[]): IncChild {
  const child = counter.labels(...values)
  child.inc(0)
  return child
}

/** The series of one route template and method, by status class: bound on first use, then reused. */
export class RouteSeries {
  private readonly byClass: (ObserveChild | undefined)[] = [
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  ]

  constructor(
    private readonly histogram: Histogram<'method' | 'route' | 'status_class'>,
    private readonly method: string,
    private readonly route: string,
  ) {}

  observe(status: number, seconds: number): void {
    const index = Math.min(4, Math.max(0, ((status / 100) | 0) - 1))
    let child = this.byClass[index]
    if (!child) {
      child = this.histogram.labels(this.method, this.route, STATUS_CLASSES[index] as string)
      this.byClass[index] = child
    }
    child.observe(seconds)
  }
}

/** Request counts and latency (the histogram's `_count` is the request count), errors by code, requests in flight. */
export class HttpMetrics {
  /** Requests being answered now; read when scraped. */
  inFlight = 0
  private readonly errorsByCode = new Map<string, IncChild>()

  constructor(
    private readonly duration: Histogram<'method' | 'route' | 'status_class'>,
    private readonly errors: Counter<'code'>,
  ) {}

  /**
   * The series of a route template and method, for the caller to keep (the surface observer binds one per route
   * template × method); `route` must be a template, never a request's path.
   */
  route(method: string, route: string): RouteSeries {
    return new RouteSeries(this.duration, method, route)
  }

  /** An error answer by its spec §7 code (a closed vocabulary): refusals of bodies, validation, limits, auth. */
  error(code: string): void {
    let child = this.errorsByCode.get(code)
    if (!child) {
      child = this.errors.labels(code)
      this.errorsByCode.set(code, child)
    }
    child.inc()
  }
}

/** Rate-limit refusals by tier and idempotency answers that did not run the request. */
export class LimitMetrics {
  private readonly refusals: Record<Tier, IncChild>
  private readonly answers: Record<IdempotencyAnswer, IncChild>

  constructor(refusals: Counter<'tier'>, answers: Counter<'outcome'>) {
    this.refusals = {
      standard: zeroed(refusals, 'standard'),
      pro: zeroed(refusals, 'pro'),
      enterprise: zeroed(refusals, 'enterprise'),
    }
    this.answers = {
      replayed: zeroed(answers, 'replayed'),
      conflict: zeroed(answers, 'conflict'),
      in_progress: zeroed(answers, 'in_progress'),
    }
  }

  rateLimited(tier: Tier): void {
    this.refusals[tier].inc()
  }

  idempotency(answer: IdempotencyAnswer): void {
    this.answers[answer].inc()
  }
}

/** Quota admissions (usage against limit at each one) and refusals, by quota name (src/domain/quotas). */
export class QuotaMetrics implements QuotaTelemetry {
  private readonly refusals = new Map<QuotaName, IncChild>()
  private readonly ratios = new Map<QuotaName, ObserveChild>()

  constructor(refusals: Counter<'quota'>, ratios: Histogram<'quota'>) {
    for (const quota of QUOTA_NAMES) {
      this.refusals.set(quota, zeroed(refusals, quota))
      this.ratios.set(quota, ratios.labels(quota))
    }
  }

  admitted(quota: QuotaName, used: number, limit: number): void {
    this.ratios.get(quota)?.observe(limit > 0 ? used / limit : 1)
  }

  refused(quota: QuotaName): void {
    this.refusals.get(quota)?.inc()
  }
}

const TERMINAL: ReadonlySet<RunStatus> = new Set(['succeeded', 'failed', 'cancelled'])

/** Run claim latency (queued → running), duration by outcome, policy decisions: from committed run changes. */
class RunMetrics implements RunTelemetry {
  private readonly durations: Record<'succeeded' | 'failed' | 'cancelled', ObserveChild>
  private readonly decisions: Record<'allow' | 'escalate' | 'deny', IncChild>

  constructor(
    private readonly claimLatency: Histogram,
    duration: Histogram<'outcome'>,
    decisions: Counter<'decision'>,
  ) {
    this.durations = {
      succeeded: duration.labels('succeeded'),
      failed: duration.labels('failed'),
      cancelled: duration.labels('cancelled'),
    }
    this.decisions = {
      allow: zeroed(decisions, 'allow'),
      escalate: zeroed(decisions, 'escalate'),
      deny: zeroed(decisions, 'deny'),
    }
  }

  changed(before: RunStatus, run: RunRecord, frames: readonly FrameRecord[]): void {
    for (const f of frames) if (f.kind === 'policy.decision' && f.policy) this.decisions[f.policy].inc()
    if (before === run.status) return
    if (before === 'queued' && run.startedAt !== null) {
      this.claimLatency.observe(Math.max(0, run.startedAt - run.createdAt) / 1000)
    }
    if (TERMINAL.has(run.status) && !TERMINAL.has(before)) {
      const outcome = run.status as 'succeeded' | 'failed' | 'cancelled'
      const from = run.startedAt ?? run.createdAt
      this.durations[outcome].observe(Math.max(0, (run.finishedAt ?? from) - from) / 1000)
    }
  }
}

class WebhookMetrics implements WebhookTelemetry {
  private readonly byOutcome: Record<DeliveryAttemptOutcome, IncChild>

  constructor(
    attempts: Counter<'outcome'>,
    private readonly givenUp: Counter,
  ) {
    this.byOutcome = { delivered: zeroed(attempts, 'delivered'), failed: zeroed(attempts, 'failed') }
  }

  attempted(outcome: DeliveryAttemptOutcome): void {
    this.byOutcome[outcome].inc()
  }

  gaveUp(): void {
    this.givenUp.inc()
  }
}

/** Destination attempts by type and outcome, and deliveries given up by type (`deleted`: the destination went). */
class DestinationMetrics implements DestinationTelemetry {
  constructor(
    private readonly attempts: Counter<'type' | 'outcome'>,
    private readonly givenUp: Counter<'type'>,
  ) {
    for (const type of DESTINATION_TYPES) {
      attempts.labels(type, 'delivered').inc(0)
      attempts.labels(type, 'failed').inc(0)
      givenUp.labels(type).inc(0)
    }
  }

  attempted(type: DestinationType, outcome: DeliveryAttemptOutcome): void {
    this.attempts.labels(type, outcome).inc()
  }

  gaveUp(type: DestinationType | undefined): void {
    this.givenUp.labels(type ?? 'deleted').inc()
  }
}

/** Ingest batches: records accepted and rejected, and how long a batch took to validate and store. */
export class IngestMetrics {
  private readonly accepted: IncChild
  private readonly rejected: IncChild

  constructor(
    records: Counter<'result'>,
    private readonly latency: Histogram,
  ) {
    this.accepted = zeroed(records, 'accepted')
    this.rejected = zeroed(records, 'rejected')
  }

  batch(accepted: number, rejected: number, seconds: number): void {
    if (accepted > 0) this.accepted.inc(accepted)
    if (rejected > 0) this.rejected.inc(rejected)
    this.latency.observe(seconds)
  }
}

/** Live subscriptions by topic kind, a fixed vocabulary (the stream's topic kinds, GraphQL's subscription fields). */
export type SubscriptionCounts = ReadonlyMap<string, number>

/**
 * One WebSocket transport: messages sent and slow-consumer closes as they happen; open sockets counted from the
 * surface observer's open/close reports; live subscriptions read from the transport when scraped.
 */
export class SocketMetrics {
  /** Sockets open now, kept by the surface observer (`socket(transport, 'open' | 'close')`). */
  open = 0
  private readonly sent: IncChild
  private readonly slow: IncChild
  private source: (() => SubscriptionCounts) | undefined
  /** Every topic kind the transport has reported so far. */
  private readonly kinds = new Set<string>()

  constructor(transport: SocketTransport, sent: Counter<'transport'>, slow: Counter<'transport'>) {
    this.sent = zeroed(sent, transport)
    this.slow = zeroed(slow, transport)
  }

  /** Where the scrape reads live subscriptions; set by the transport when it attaches. */
  readFrom(source: () => SubscriptionCounts): void {
    this.source = source
  }

  /**
   * Live subscriptions by kind, every kind reported before included: a transport may leave out a kind nobody
   * subscribes to now (graphql-ws's reading does), and a gauge series that is not set keeps its last value.
   */
  subscriptions(): SubscriptionCounts | undefined {
    const live = this.source?.()
    if (!live) return undefined
    const counts = new Map<string, number>()
    for (const kind of this.kinds) counts.set(kind, 0)
    for (const [kind, n] of live) {
      this.kinds.add(kind)
      counts.set(kind, n)
    }
    return counts
  }

  messageSent(): void {
    this.sent.inc()
  }

  slowConsumerClosed(): void {
    this.slow.inc()
  }
}

/** Where a PostgreSQL statement ran (src/store/db.ts StatementPath): the label values of its latency. */
const STATEMENT_PATHS = ['pipeline', 'pool', 'transaction'] as const
type StatementPath = (typeof STATEMENT_PATHS)[number]

/** The store's transaction and statement latency and LISTEN reconnects; the pool is read when scraped. */
export class StoreMetrics {
  /** One pre-bound child per path: observing a statement allocates no label object. */
  private readonly statementsByPath: Record<StatementPath, Histogram.Internal<string>>

  constructor(
    private readonly transactions: Histogram,
    private readonly reconnects: Counter,
    statements: Histogram<'path'>,
  ) {
    this.statementsByPath = {
      pipeline: statements.labels('pipeline'),
      pool: statements.labels('pool'),
      transaction: statements.labels('transaction'),
    }
  }

  /** One statement, from its sending to its answer (PostgreSQL). */
  statement(path: StatementPath, seconds: number): void {
    this.statementsByPath[path].observe(seconds)
  }

  /** One transaction, from its start (waiting for a connection included) to its acknowledged COMMIT. */
  transaction(seconds: number): void {
    this.transactions.observe(seconds)
  }

  listenReconnected(): void {
    this.reconnects.inc()
  }
}

export type { StoreGauges }

let processRegistry: Registry | undefined
/** Node's own metrics (event-loop lag, heap, GC, CPU, handles), collected once per process. */
function nodeRegistry(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

export interface Metrics {
  readonly http: HttpMetrics
  readonly limits: LimitMetrics
  readonly quotas: QuotaMetrics
  readonly runs: RunTelemetry
  readonly webhooks: WebhookTelemetry
  readonly destinations: DestinationTelemetry
  readonly ingest: IngestMetrics
  readonly stream: SocketMetrics
  readonly graphql: SocketMetrics
  readonly store: StoreMetrics
  /** Where the scrape reads queue, outbox and pool figures; set once the store is open. */
  readGaugesFrom(gauges: StoreGauges): void
  /** The exposition text and its content type. */
  render(): Promise<{ contentType: string; body: string }>
}

export function createMetrics(): Metrics {
  const registry = new Registry()
  const registers = [registry]
  let gauges: StoreGauges | undefined

  const http = new HttpMetrics(
    new Histogram({
      name: 'agentops_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status class: latency until the answer was ready (its _count is the request count)',
      labelNames: ['method', 'route', 'status_class'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    new Counter({
      name: 'agentops_http_errors_total',
      help: 'Error answers by spec error code (payload_too_large, invalid_request and unsupported_media_type are body-limit and validation refusals)',
      labelNames: ['code'],
      registers,
    }),
  )
  new Gauge({
    name: 'agentops_http_requests_in_flight',
    help: 'HTTP requests being answered now',
    registers,
    collect() {
      this.set(http.inFlight)
    },
  })

  const limits = new LimitMetrics(
    new Counter({
      name: 'agentops_rate_limit_refusals_total',
      help: 'Requests refused with 429 rate_limited, by the workspace tier',
      labelNames: ['tier'],
      registers,
    }),
    new Counter({
      name: 'agentops_idempotency_answers_total',
      help: 'POSTs with an Idempotency-Key that did not run: replayed answers, conflicts (key reused), in-progress refusals',
      labelNames: ['outcome'],
      registers,
    }),
  )

  const runs = new RunMetrics(
    new Histogram({
      name: 'agentops_run_claim_latency_seconds',
      help: 'From a run being queued to a scheduler starting it',
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    new Histogram({
      name: 'agentops_run_duration_seconds',
      help: 'From a run starting to its end, by outcome',
      labelNames: ['outcome'],
      buckets: RUN_BUCKETS,
      registers,
    }),
    new Counter({
      name: 'agentops_policy_decisions_total',
      help: 'Policy gate decisions on run steps, by decision',
      labelNames: ['decision'],
      registers,
    }),
  )
  new Gauge({
    name: 'agentops_runs',
    help: 'Runs in the store by status (queued, running, awaiting_approval); the same on every replica of one store',
    labelNames: ['status'],
    registers,
    async collect() {
      // An unreachable store leaves the last figures (and /readyz says why): the scrape itself still answers.
      const counts = await gauges?.runsByStatus().catch(() => undefined)
      if (!counts) return
      for (const status of ['queued', 'running', 'awaiting_approval'] as const) {
        this.labels(status).set(counts[status] ?? 0)
      }
    },
  })

  const webhooks = new WebhookMetrics(
    new Counter({
      name: 'agentops_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome (failed: an error status, a time-out or a refused connection)',
      labelNames: ['outcome'],
      registers,
    }),
    new Counter({
      name: 'agentops_webhook_deliveries_given_up_total',
      help: 'Webhook deliveries marked failed after their last attempt',
      registers,
    }),
  )
  const destinations = new DestinationMetrics(
    new Counter({
      name: 'agentops_destination_attempts_total',
      help: 'Destination delivery attempts by destination type and outcome (failed: an error answer, a time-out, a refusal)',
      labelNames: ['type', 'outcome'],
      registers,
    }),
    new Counter({
      name: 'agentops_destination_deliveries_given_up_total',
      help: 'Destination deliveries marked failed after their last attempt, by destination type',
      labelNames: ['type'],
      registers,
    }),
  )
  // Both outbox gauges from one store read per scrape, each set in its own collect: prom-client collects a scrape's
  // metrics at once, so a gauge set from another's collect showed what the previous scrape had read.
  let outboxRead: Promise<Awaited<ReturnType<StoreGauges['outbox']>> | undefined> | undefined
  const readOutbox = () => {
    outboxRead ??= (async () => {
      try {
        return await gauges?.outbox()
      } catch {
        return undefined
      } finally {
        outboxRead = undefined
      }
    })()
    return outboxRead
  }
  new Gauge({
    name: 'agentops_webhook_outbox_oldest_age_seconds',
    help: 'Age of the oldest delivery not yet delivered or given up (0 when none); the same on every replica',
    registers,
    async collect() {
      const outbox = await readOutbox()
      if (outbox) this.set(outbox.oldestAgeSeconds)
    },
  })
  new Gauge({
    name: 'agentops_webhook_outbox_depth',
    help: 'Deliveries waiting for a first or a further attempt; the same on every replica of one store',
    registers,
    async collect() {
      const outbox = await readOutbox()
      if (outbox) this.set(outbox.depth)
    },
  })

  const ingest = new IngestMetrics(
    new Counter({
      name: 'agentops_ingest_records_total',
      help: 'Ingested records by result (accepted, rejected)',
      labelNames: ['result'],
      registers,
    }),
    new Histogram({
      name: 'agentops_ingest_batch_duration_seconds',
      help: 'Time to validate and store one ingest batch',
      buckets: LATENCY_BUCKETS,
      registers,
    }),
  )

  const sent = new Counter({
    name: 'agentops_socket_messages_sent_total',
    help: 'Messages sent on WebSockets, by transport (stream, graphql)',
    labelNames: ['transport'],
    registers,
  })
  const slow = new Counter({
    name: 'agentops_socket_slow_consumer_closes_total',
    help: 'WebSockets closed because the client did not read fast enough, by transport',
    labelNames: ['transport'],
    registers,
  })
  const stream = new SocketMetrics('stream', sent, slow)
  const graphql = new SocketMetrics('graphql', sent, slow)
  new Gauge({
    name: 'agentops_sockets_open',
    help: 'Open WebSockets by transport (stream, graphql)',
    labelNames: ['transport'],
    registers,
    collect() {
      this.labels('stream').set(stream.open)
      this.labels('graphql').set(graphql.open)
    },
  })
  new Gauge({
    name: 'agentops_socket_subscriptions',
    help: 'Live subscriptions by transport and topic kind',
    labelNames: ['transport', 'topic'],
    registers,
    collect() {
      for (const [kind, n] of stream.subscriptions() ?? []) this.labels('stream', kind).set(n)
      for (const [kind, n] of graphql.subscriptions() ?? []) this.labels('graphql', kind).set(n)
    },
  })

  const store = new StoreMetrics(
    new Histogram({
      name: 'agentops_store_transaction_duration_seconds',
      help: 'Store transactions, from their start (a pooled connection included) to the acknowledged COMMIT',
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    new Counter({
      name: 'agentops_store_listen_reconnects_total',
      help: 'Times the PostgreSQL LISTEN connection (cross-replica wake-ups) was re-established',
      registers,
    }),
    new Histogram({
      name: 'agentops_store_statement_duration_seconds',
      help: 'PostgreSQL statements, from their sending to their answer, by path (pipeline, pool, transaction)',
      labelNames: ['path'],
      buckets: STATEMENT_BUCKETS,
      registers,
    }),
  )
  new Gauge({
    name: 'agentops_store_pool_connections',
    help: 'Store connections by state (total, idle)',
    labelNames: ['state'],
    registers,
    collect() {
      if (!gauges) return
      const pool = gauges.pool()
      this.labels('total').set(pool.total)
      this.labels('idle').set(pool.idle)
    },
  })
  new Gauge({
    name: 'agentops_store_pool_waiting',
    help: 'Statements waiting for a free store connection',
    registers,
    collect() {
      if (gauges) this.set(gauges.pool().waiting)
    },
  })

  const quotas = new QuotaMetrics(
    new Counter({
      name: 'agentops_quota_refusals_total',
      help: 'Writes refused with 403 quota_exceeded (and answers not stored), by quota',
      labelNames: ['quota'],
      registers,
    }),
    new Histogram({
      name: 'agentops_quota_usage_ratio',
      help: "A workspace's usage of a quota over its limit, observed at each admission, by quota",
      labelNames: ['quota'],
      buckets: [0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1],
      registers,
    }),
  )

  return {
    http,
    limits,
    quotas,
    runs,
    webhooks,
    destinations,
    ingest,
    stream,
    graphql,
    store,
    readGaugesFrom(source) {
      gauges = source
    },
    async render() {
      const merged = Registry.merge([nodeRegistry(), registry])
      return { contentType: merged.contentType, body: await merged.metrics() }
    },
  }
}
