import { randomBytes } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import type { Clock } from '../clock.js'
import { CONSOLE_FAILURE_LOG, type FailureLog } from '../failure-log.js'
import { newId } from '../ids.js'
import type { Db, TxBound } from '../ports.js'
import type { DeliveryAttemptOutcome, LeaseTelemetry } from '../telemetry.js'
import { RETRY_CAP_MS, type RetryPolicy, retryDelayMs } from '../webhooks/backoff.js'
import { deliveryBody, type EventKind, isEventKind, type LoggedEvent } from '../webhooks/body.js'
import type { DeliveryRepository } from '../webhooks/ports.js'
import type { SendResult } from '../webhooks/sender.js'
import type { AttemptOutcome, DeliveryRecord, NewDelivery } from '../webhooks/types.js'
import { OutcomeWriter } from './outcomes.js'
import { RetryAlarm } from './retry-alarm.js'

/** What the dispatcher needs from the event log: reading by sequence number and a wake-up after commits. */
export interface EventSource {
  read(afterSeq: number, limit: number): Promise<(LoggedEvent & { seq: number; workspaceId: string })[]>
  subscribe(listener: () => void): () => void
}

/** A subscriber the outbox delivers to: a webhook subscription or a destination. */
export interface OutboxTarget {
  id: string
  workspaceId: string
  /** The last event-log seq when the target was created: only later events reach it. */
  afterEventSeq: number
}

/** What the outbox reads of its targets (WebhookRepository and DestinationRepository have this shape). */
export interface OutboxTargets<T extends OutboxTarget> extends TxBound<OutboxTargets<T>> {
  get(workspaceId: string, id: string): Promise<T | undefined>
  /** The targets of these (workspace, id) pairs that exist, by id, in one read. */
  getMany(keys: readonly { workspaceId: string; id: string }[]): Promise<Map<string, T>>
  /** Active targets of these workspaces, for fanning events out. */
  activeIn(workspaceIds: readonly string[]): Promise<T[]>
  /** The smallest `afterEventSeq` of any active target, or null when there is none. */
  minAfterSeq(): Promise<number | null>
  cursor(name: string): Promise<number>
  /** Moves the fan-out cursor forward only, so two replicas fanning out at once never move it back. */
  advanceCursor(name: string, seq: number): Promise<void>
}

/** One attempt's reach: the time-out and the shutdown signal that cuts it short. */
export interface AttemptContext {
  timeoutMs: number
  signal: AbortSignal
  now: number
}

/** A kind of target: which events it wants and how one attempt is made (webhooks sign and POST; see destinations). */
export interface OutboxChannel<T extends OutboxTarget> {
  /** The fan-out cursor's name; each channel turns the event log into its own rows. */
  cursorName: string
  /** Words for the failure log ("webhook", "destination"). */
  noun: string
  targets: OutboxTargets<T>
  /** Whether `target` gets this event (the workspace and `afterEventSeq` are checked by the dispatcher). */
  wants(target: T, event: DispatchedEvent, kind: EventKind): boolean
  /** One attempt; never throws (a throw is recorded as a failed attempt all the same). */
  send(row: DeliveryRecord, target: T, context: AttemptContext): Promise<SendResult>
}

/** Attempts and deliveries given up, told which target they were for (undefined: it was deleted). */
export interface OutboxTelemetry<T> {
  attempted(outcome: DeliveryAttemptOutcome, target: T): void
  gaveUp(target: T | undefined): void
}

export type DispatchedEvent = LoggedEvent & { seq: number; workspaceId: string }

export interface DispatcherOptions<T extends OutboxTarget> {
  retry: RetryPolicy
  /** Per-attempt time-out in ms (default 10 s). */
  timeoutMs: number
  /** Attempts in flight at once across all subscriptions (the global pool). */
  concurrency: number
  /**
   * How often due rows are looked for when nothing wakes the dispatcher: the net for what no wake-up here announces
   * (another replica's retries, a lapsed lease). This process's own retries wake it when they come due.
   */
  pollMs: number
  /** Full-jitter source; tests pin it. */
  random?: () => number
  /** Attempts and deliveries given up, for the server's metrics. */
  telemetry?: OutboxTelemetry<T>
  /** Told when a pass takes over deliveries another process let lapse. */
  leases?: LeaseTelemetry
  /** Where a dispatch pass that fails unexpectedly is logged; default standard error. */
  failures?: FailureLog
}

/** The delivery settings every channel's service takes (webhooks, destinations); the retry cap is the outbox's own. */
export interface OutboxSettings {
  /** Attempts in all and the first retry's delay scale; the cap is RETRY_CAP_MS. */
  retry: Pick<RetryPolicy, 'maxAttempts' | 'baseMs'>
  timeoutMs: number
  concurrency: number
  pollMs: number
  random?: () => number
  /** Told when the dispatcher takes over deliveries another process let lapse. */
  leases?: LeaseTelemetry
  failures?: FailureLog
}

/** A channel service's settings as its dispatcher's options, with the channel's own telemetry. */
export function dispatcherOptions<T extends OutboxTarget>(
  settings: OutboxSettings,
  telemetry?: OutboxTelemetry<T>,
): DispatcherOptions<T> {
  return {
    retry: { capMs: RETRY_CAP_MS, ...settings.retry },
    timeoutMs: settings.timeoutMs,
    concurrency: settings.concurrency,
    pollMs: settings.pollMs,
    random: settings.random,
    telemetry,
    leases: settings.leases,
    failures: settings.failures,
  }
}

const FANOUT_BATCH = 500
/** Extra lease time beyond the attempt time-out, so a slow database write does not let another replica resend. */
const LEASE_MARGIN_MS = 5_000

/**
 * Turns the event log into outbox rows (fan-out) and sends due rows (dispatch), for one channel (webhooks,
 * destinations). Both sides work only from the store, so a restart resumes exactly where the rows say: nothing is
 * lost, and a row's id (the `webhook-id`) stays the same on every attempt. One target has at most one attempt in
 * flight across every process (the claim skips a target with a live lease), and the global pool bounds the rest,
 * so a slow receiver holds one slot, never the others'.
 */
export class OutboxDispatcher<T extends OutboxTarget> {
  private readonly owner = `dsp_${randomBytes(8).toString('hex')}`
  private readonly busy = new Set<string>()
  private readonly inFlight = new Set<Promise<void>>()
  private running = false
  private pass: Promise<void> | null = null
  // Stryker disable next-line BooleanLiteral: a speed path: looking for more than a wake-up needs costs a read, never an answer
  private again = false
  /**
   * Whether the next pass looks for due rows. A wake-up for new events only needs one when the fan-out created
   * rows: under write load that spares a query per commit. Rows that become due later are found through the
   * retry alarm (this process's retries), the attempt that frees a slot, and the poll timer (the rest).
   */
  // Stryker disable next-line BooleanLiteral: equivalent, start() wakes with both looks asked for
  private dueCheck = true
  /**
   * Whether the next pass reads the event log for new events. An attempt that ends frees a pool slot and wants due
   * rows looked for, not the log read again: new events wake the dispatcher themselves (and the poll timer).
   */
  // Stryker disable next-line BooleanLiteral: equivalent, start() wakes with both looks asked for
  private fanOutCheck = true
  /** A pass for freed pool slots is asked for at the end of this turn of the event loop. */
  private slotsFreed = false
  private timer: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined
  private shutdown = new AbortController()
  /** Outcomes of the attempts ending in one turn of the event loop, written in one statement. */
  private readonly outcomes: OutcomeWriter
  /** Looks for due rows when a retry scheduled here comes due, rather than at the next poll. */
  private readonly retries: RetryAlarm
  /** Where failures nobody waits for are logged: the options' log, else standard error. */
  private readonly failures: FailureLog

  constructor(
    private readonly db: Db,
    private readonly channel: OutboxChannel<T>,
    private readonly deliveries: DeliveryRepository,
    private readonly clock: Clock,
    private readonly events: EventSource,
    private readonly options: DispatcherOptions<T>,
  ) {
    this.outcomes = new OutcomeWriter(deliveries, this.owner)
    this.failures = options.failures ?? CONSOLE_FAILURE_LOG
    this.retries = new RetryAlarm(
      // Stryker disable next-line BooleanLiteral: a speed path: looking for more than a wake-up needs costs a read, never an answer
      () => this.wake({ fanOut: false, due: true }),
      () => this.clock.now(),
    )
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.shutdown = new AbortController()
    // Every attempt in flight listens for the shutdown: as many as the pool, which Node would otherwise take for a
    // listener leak past ten.
    setMaxListeners(this.options.concurrency + 1, this.shutdown.signal)
    // Stryker disable next-line BooleanLiteral: a speed path: looking for more than a wake-up needs costs a read, never an answer
    this.unsubscribe = this.events.subscribe(() => this.wake({ fanOut: true, due: false }))
    this.timer = setInterval(() => this.wake(), Math.max(10, this.options.pollMs))
    this.timer.unref()
    this.wake()
  }

  async stop(): Promise<void> {
    this.retries.clear()
    if (!this.running) {
      await Promise.allSettled([...this.inFlight])
      return
    }
    this.running = false
    this.unsubscribe?.()
    if (this.timer) clearInterval(this.timer)
    // Attempts in flight are cut short and not recorded: their leases run out and another start retries them
    // (same webhook-id), which keeps shutdown fast without losing a delivery.
    this.shutdown.abort()
    await this.pass
    await Promise.allSettled([...this.inFlight])
    // Hand the cut-short rows back now rather than when their leases lapse: another replica retries them at once.
    await this.deliveries.releaseLeases(this.owner, this.clock.now()).catch(() => undefined)
  }

  /**
   * Asks for a pass soon; passes never overlap, and a wake during a pass runs one more. By default a pass reads new
   * events and looks for due rows; `due: false` only fans out new events (due rows are then looked for only if the
   * fan-out made some), `fanOut: false` only looks for due rows.
   */
  wake(look: { fanOut: boolean; due: boolean } = { fanOut: true, due: true }): void {
    if (!this.running) return
    // Stryker disable next-line ConditionalExpression: a speed path: looking for more than a wake-up needs costs a read, never an answer
    if (look.due) this.dueCheck = true
    // Stryker disable next-line ConditionalExpression: a speed path: looking for more than a wake-up needs costs a read, never an answer
    if (look.fanOut) this.fanOutCheck = true
    if (this.pass) {
      this.again = true
      return
    }
    this.pass = (async () => {
      do {
        this.again = false
        const fanOut = this.fanOutCheck
        // Stryker disable next-line BooleanLiteral: a speed path: looking for more than a wake-up needs costs a read, never an answer
        this.fanOutCheck = false
        const created = fanOut ? await this.fanOut() : 0
        // Stryker disable next-line ConditionalExpression,EqualityOperator: a speed path: looking for more than a wake-up needs costs a read, never an answer
        if (created > 0 || this.dueCheck) {
          // Stryker disable next-line BooleanLiteral: a speed path: looking for more than a wake-up needs costs a read, never an answer
          this.dueCheck = false
          await this.dispatchDue()
        }
      } while (this.again && this.running)
    })()
      .catch((err: unknown) => this.failures.error({ err }, `${this.channel.noun} dispatch pass failed`))
      .finally(() => {
        this.pass = null
      })
  }

  /**
   * Looks for due rows once the attempts ending in this turn of the event loop have all freed their slots: their
   * outcomes are committed together (group commit), so they end together, and one pass then claims for all of them
   * rather than one pass per ended attempt.
   */
  private wakeForFreedSlots(): void {
    // Stryker disable next-line ConditionalExpression: a speed path: looking for more than a wake-up needs costs a read, never an answer
    if (this.slotsFreed) return
    // Stryker disable next-line BooleanLiteral: a speed path: looking for more than a wake-up needs costs a read, never an answer
    this.slotsFreed = true
    setImmediate(() => {
      this.slotsFreed = false
      // Stryker disable next-line BooleanLiteral: a speed path: looking for more than a wake-up needs costs a read, never an answer
      this.wake({ fanOut: false, due: true })
    })
  }

  /**
   * Fans out, then sends every due row and waits for the attempts, until nothing due is left (tests drive the
   * outbox with it). Bounded: each round makes at least one attempt, and attempts per row are bounded.
   */
  async runOnce(): Promise<void> {
    await this.fanOut()
    for (;;) {
      const started = await this.dispatchDue()
      await Promise.allSettled([...this.inFlight])
      if (started === 0) return
    }
  }

  /** Creates one pending row per (subscribed target, new event), then moves the cursor past the batch. */
  async fanOut(): Promise<number> {
    const { targets, cursorName } = this.channel
    let created = 0
    for (;;) {
      const minAfter = await targets.minAfterSeq()
      // With no subscription there is nothing to fan out to; the cursor waits where it is.
      if (minAfter === null) return created
      const stored = await targets.cursor(cursorName)
      const cursor = Math.max(stored, minAfter)
      const batch = await this.events.read(cursor, FANOUT_BATCH)
      const last = batch[batch.length - 1]
      if (!last) {
        // Nothing new: the cursor is written only when the oldest subscription moved it on.
        if (cursor > stored) await targets.advanceCursor(cursorName, cursor)
        return created
      }
      const now = this.clock.now()
      created += await this.db.transaction(async (tx) => {
        const workspaces = [...new Set(batch.map((e) => e.workspaceId))]
        // An event is offered to its own workspace's targets only: looked up by its workspace, never filtered out
        // of all of them, so no target of another workspace is ever a candidate.
        const targetsOf = new Map<string, T[]>()
        for (const t of await targets.in(tx).activeIn(workspaces)) {
          const own = targetsOf.get(t.workspaceId)
          if (own) own.push(t)
          else targetsOf.set(t.workspaceId, [t])
        }
        const rows: NewDelivery[] = []
        for (const event of batch) {
          const kind = event.kind
          // A kind outside the contract's list cannot be subscribed to.
          // Stryker disable next-line ConditionalExpression: equivalent, no target wants a kind outside the contract's list (wants() reads the kinds it was created with, each one of them)
          if (!isEventKind(kind)) continue
          let payload: Record<string, unknown> | undefined
          for (const sub of targetsOf.get(event.workspaceId) ?? []) {
            // A target gets the events after its creation only.
            if (event.seq <= sub.afterEventSeq) continue
            if (!this.channel.wants(sub, event, kind)) continue
            // Every target of an event gets the same body: built once.
            payload ??= deliveryBody(event)
            rows.push({
              // Stryker disable next-line StringLiteral: an id's prefix is the reference's choice (§6 "Webhook subscription response fields: not shown"; the delivery log is the reference's own)
              id: newId('dlv', now),
              webhookId: sub.id,
              workspaceId: sub.workspaceId,
              eventId: event.id,
              eventSeq: event.seq,
              eventKind: kind,
              payload,
              now,
            })
          }
        }
        const n = await this.deliveries.in(tx).insertMany(rows)
        await targets.in(tx).advanceCursor(cursorName, last.seq)
        return n
      })
      if (batch.length < FANOUT_BATCH) return created
    }
  }

  /** Claims due rows up to the pool size, skipping subscriptions that already have an attempt in flight anywhere. */
  async dispatchDue(): Promise<number> {
    const free = this.options.concurrency - this.inFlight.size
    if (free <= 0) return 0
    const now = this.clock.now()
    const leaseUntil = now + this.options.timeoutMs + LEASE_MARGIN_MS
    const claimed = await this.deliveries.claimDue(now, free, [...this.busy], this.owner, leaseUntil)
    if (claimed.length === 0) return 0
    // Stryker disable next-line all: counted for the lease metric only (the next line), no answer of the API
    const takenOver = claimed.filter(({ claim }) => claim === 'taken-over').length
    if (takenOver > 0) this.options.leases?.takenOver('deliveries', takenOver)
    // The claimed rows' targets in one read; a target missing now was deleted (its attempt records that).
    const targets = await this.channel.targets.getMany(
      claimed.map(({ row }) => ({ workspaceId: row.workspaceId, id: row.webhookId })),
    )
    for (const { row } of claimed) {
      this.busy.add(row.webhookId)
      const attempt = this.attempt(row, targets.get(row.webhookId))
        // An outcome the store did not take leaves the row leased: it is sent again once the lease lapses.
        .catch((err: unknown) =>
          this.failures.error(
            { err, deliveryId: row.id },
            `${this.channel.noun} attempt's outcome was not recorded`,
          ),
        )
        .finally(() => {
          this.busy.delete(row.webhookId)
          this.inFlight.delete(attempt)
          // The subscription may have more rows due, and a pool slot is free again.
          this.wakeForFreedSlots()
        })
      this.inFlight.add(attempt)
    }
    return claimed.length
  }

  private async attempt(row: DeliveryRecord, target: T | undefined): Promise<void> {
    const now = this.clock.now()
    const telemetry = this.options.telemetry
    if (!target) {
      telemetry?.gaveUp(undefined)
      await this.outcomes.record({
        id: row.id,
        attemptsBefore: row.attempts,
        outcome: { kind: 'failed', statusCode: null, error: `${this.channel.noun} deleted` },
        now,
      })
      return
    }
    let result: SendResult
    try {
      result = await this.channel.send(row, target, {
        timeoutMs: this.options.timeoutMs,
        signal: this.shutdown.signal,
        now,
      })
    } catch (err) {
      result = { ok: false, statusCode: null, error: err instanceof Error ? err.message : String(err) }
    }
    if (this.shutdown.signal.aborted) return
    const done = this.clock.now()
    const outcome = this.outcome(row, result, done)
    if (telemetry) {
      telemetry.attempted(outcome.kind === 'delivered' ? 'delivered' : 'failed', target)
      if (outcome.kind === 'failed') telemetry.gaveUp(target)
    }
    const recorded = await this.outcomes.record({
      id: row.id,
      attemptsBefore: row.attempts,
      outcome,
      now: done,
    })
    // A row whose lease was lost is its new owner's to retry; a dispatcher driven by runOnce wakes no one.
    if (recorded && outcome.kind === 'retry' && this.running) this.retries.schedule(outcome.nextAttemptAt)
  }

  private outcome(row: DeliveryRecord, result: SendResult, now: number): AttemptOutcome {
    if (result.ok) return { kind: 'delivered', statusCode: result.statusCode }
    const attempt = row.attempts + 1
    const error = result.error
    if (attempt >= this.options.retry.maxAttempts)
      return { kind: 'failed', statusCode: result.statusCode, error }
    // A receiver that says when to come back (429/503 with Retry-After) is taken at its word, within the cap.
    const delay =
      result.retryAfterMs !== undefined
        ? Math.min(Math.max(0, result.retryAfterMs), this.options.retry.capMs)
        : retryDelayMs(attempt, this.options.retry, this.options.random)
    return { kind: 'retry', statusCode: result.statusCode, error, nextAttemptAt: now + delay }
  }
}
