import type { LeaseClaim } from '../../domain/leases.js'
import type { Slice } from '../../domain/pagination.js'
import type { EventKind } from '../../domain/webhooks/body.js'
import type { DeliveryRepository } from '../../domain/webhooks/ports.js'
import type {
  AttemptOutcome,
  AttemptRecord,
  DeliveryRecord,
  DeliveryStatus,
  NewDelivery,
} from '../../domain/webhooks/types.js'
import { type Dialect, fromJson, type Queryable, type SqlValue, toJson } from '../db.js'
import { childPage } from '../paging.js'

interface RawDelivery extends Record<string, unknown> {
  seq: number | string
  id: string
  webhook_id: string
  workspace_id: string
  event_id: string
  event_seq: number | string
  event_kind: string
  payload: string
  status: string
  attempts: number | string
  last_status_code: number | string | null
  last_error: string | null
  next_attempt_at: number | string | null
  lease_owner: string | null
  lease_until: number | string | null
  created_at: number | string
  updated_at: number | string
  delivered_at: number | string | null
}

function num(v: number | string | null): number | null {
  return v === null ? null : Number(v)
}

function toDelivery(r: RawDelivery): DeliveryRecord {
  return {
    seq: Number(r.seq),
    id: r.id,
    webhookId: r.webhook_id,
    workspaceId: r.workspace_id,
    eventId: r.event_id,
    eventSeq: Number(r.event_seq),
    eventKind: r.event_kind as EventKind,
    payload: fromJson<Record<string, unknown>>(r.payload),
    status: r.status as DeliveryStatus,
    attempts: Number(r.attempts),
    lastStatusCode: num(r.last_status_code),
    lastError: r.last_error,
    nextAttemptAt: num(r.next_attempt_at),
    leaseOwner: r.lease_owner,
    leaseUntil: num(r.lease_until),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    deliveredAt: num(r.delivered_at),
  }
}

/** Rows per INSERT of `insertMany`: 9 parameters each, well under SQLite's 32,766 and PostgreSQL's 65,535. */
const INSERT_CHUNK = 500

/** A row's status once an attempt with this outcome is recorded. */
function statusAfter(outcome: AttemptOutcome): DeliveryStatus {
  return outcome.kind === 'delivered' ? 'delivered' : outcome.kind === 'failed' ? 'failed' : 'pending'
}

/** What an attempt's outcome writes: status, last_status_code, last_error, next_attempt_at, delivered_at, updated_at. */
function outcomeColumns({ outcome, now }: AttemptRecord): SqlValue[] {
  return [
    statusAfter(outcome),
    outcome.statusCode,
    outcome.kind === 'delivered' ? null : outcome.error,
    outcome.kind === 'retry' ? outcome.nextAttemptAt : null,
    outcome.kind === 'delivered' ? now : null,
    now,
  ]
}

/** Outcomes per UPDATE of `recordAttempts`: 8 parameters each; a pool's worth of attempts fits in one. */
const OUTCOME_CHUNK = 64

/** Which dispatcher a row belongs to: webhook subscriptions or destinations share the one outbox table. */
export type OutboxChannelName = 'webhook' | 'destination'

/**
 * The delivery outbox: rows are claimed with a lease so two replicas never send the same attempt at once. One
 * table serves every channel; a repository sees and creates the rows of its channel only.
 */
export class DeliveryRepo implements DeliveryRepository {
  readonly gathersOutcomes: boolean

  constructor(
    private readonly db: Queryable,
    private readonly channel: OutboxChannelName = 'webhook',
    private readonly dialect: Dialect = 'dialect' in db && db.dialect === 'sqlite' ? 'sqlite' : 'postgres',
  ) {
    // SQLite's group commit already puts the outcomes written in one turn of the event loop in one transaction, and
    // its single-row UPDATEs cost less than the joined one; on PostgreSQL each statement is a round trip and a commit.
    this.gathersOutcomes = dialect === 'postgres'
  }

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): DeliveryRepo {
    return new DeliveryRepo(tx, this.channel, this.dialect)
  }

  /**
   * Creates the rows whose (subscription, event) pair has none yet, several to a statement (one event fanned out
   * to a thousand targets is a few statements, not a thousand); the number created.
   */
  async insertMany(rows: readonly NewDelivery[]): Promise<number> {
    let created = 0
    // One event's rows share its body: serialised once.
    const bodies = new Map<Record<string, unknown>, string>()
    const json = (payload: Record<string, unknown>) => {
      let text = bodies.get(payload)
      if (text === undefined) {
        text = toJson(payload)
        bodies.set(payload, text)
      }
      return text
    }
    for (let from = 0; from < rows.length; from += INSERT_CHUNK) {
      const chunk = rows.slice(from, from + INSERT_CHUNK)
      const params: (string | number)[] = []
      const values = chunk.map((d) => {
        const at = params.length
        params.push(
          d.id,
          d.webhookId,
          d.workspaceId,
          d.eventId,
          d.eventSeq,
          d.eventKind,
          json(d.payload),
          d.now,
        )
        params.push(this.channel)
        const $ = (i: number) => `$${at + i}`
        return `(${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)}, ${$(6)}, ${$(7)}, 'pending', 0, ${$(8)}, ${$(8)}, ${$(8)}, ${$(9)})`
      })
      created += await this.db.run(
        `INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, event_seq, event_kind, payload,
           status, attempts, next_attempt_at, created_at, updated_at, channel)
         VALUES ${values.join(', ')}
         ON CONFLICT (webhook_id, event_id) DO NOTHING`,
        params,
      )
    }
    return created
  }

  async get(webhookId: string, id: string): Promise<DeliveryRecord | undefined> {
    const row = await this.db.one<RawDelivery>(
      'SELECT * FROM webhook_deliveries WHERE webhook_id = $1 AND id = $2',
      [webhookId, id],
    )
    return row ? toDelivery(row) : undefined
  }

  list(webhookId: string, afterSeq: number, limit: number): Promise<Slice<DeliveryRecord>> {
    return childPage(this.db, 'webhook_deliveries', 'webhook_id', webhookId, afterSeq, limit, toDelivery)
  }

  async claimDue(
    now: number,
    limit: number,
    busy: readonly string[],
    owner: string,
    leaseUntil: number,
  ): Promise<{ row: DeliveryRecord; claim: LeaseClaim }[]> {
    const picked = await this.oldestDue(now, limit, busy)
    if (picked.length === 0) return []
    // Two statements tell a lapsed lease of another owner (`taken-over`) from a free row without reading first:
    // the second takes only what the first left, and together they take exactly the picked rows still due whose
    // lease is absent or lapsed. The rows are found by id: `status || ''` and `next_attempt_at + 0` keep SQLite's
    // planner off the due index, which it otherwise prefers and walks every pending row with.
    const take = (whose: string, ids: readonly string[]) =>
      this.db.query<RawDelivery>(
        `UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $2, updated_at = $3
         WHERE id IN (${ids.map((_, i) => `$${i + 4}`).join(', ')}) AND status || '' = 'pending'
           AND next_attempt_at + 0 <= $3
           AND (lease_until IS NULL OR lease_until <= $3) AND ${whose}
         RETURNING *`,
        [owner, leaseUntil, now, ...ids],
      )
    const taken = new Map<string, { row: DeliveryRecord; claim: LeaseClaim }>()
    for (const r of await take('(lease_owner IS NULL OR lease_owner = $1)', picked))
      taken.set(r.id, { row: toDelivery(r), claim: 'claimed' })
    const left = picked.filter((id) => !taken.has(id))
    if (left.length > 0)
      for (const r of await take('lease_owner <> $1', left))
        taken.set(r.id, { row: toDelivery(r), claim: 'taken-over' })
    return picked.flatMap((id) => taken.get(id) ?? [])
  }

  /**
   * The oldest due row of each subscription that has one, subscriptions ordered by how long their oldest row has
   * waited: one receiver's backlog can never fill the whole candidate list. Left out: the `busy` subscriptions and
   * any whose attempt is in flight on another replica (a live lease, read through the leased index in the same
   * statement, so one snapshot judges both), so a subscription's events go out one at a time wherever they are
   * sent from (a run's second PagerDuty trigger never overtakes the resolve before it). The in-flight set is a
   * filter (`NOT IN` a subquery, hashed once per statement), not an anti-join probing the leased index per due row:
   * with the anti-join, full conformance runs on PostgreSQL delivered far more slowly (measured, docs/performance.md,
   * not explained). The due rows are walked in the due index's order (next_attempt_at, then seq), a page at a
   * time, so a subscription's first row met is its oldest. Each page leaves out the subscriptions already busy or
   * picked, so the walk ends once `limit` subscriptions are found or the due rows run out, however long one
   * subscription's backlog is.
   */
  private async oldestDue(now: number, limit: number, busy: readonly string[]): Promise<string[]> {
    const seen = new Set(busy)
    const picked: string[] = []
    let after: [number, number] | undefined
    for (;;) {
      // Rows of one subscription in a page are the only ones skipped: a little more than is still wanted.
      const page = Math.max(2 * (limit - picked.length), 8)
      const skip = [...seen]
      const params: (string | number)[] = [now, this.channel, page, ...(after ?? []), ...skip]
      const skipFrom = after ? 6 : 4
      const rows = await this.db.query<{
        id: string
        webhook_id: string
        next_attempt_at: number | string
        seq: number | string
      }>(
        `SELECT id, webhook_id, next_attempt_at, seq FROM webhook_deliveries
         WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
           AND channel = $2 ${after ? 'AND (next_attempt_at > $4 OR (next_attempt_at = $4 AND seq > $5))' : ''}
           ${skip.length > 0 ? `AND webhook_id NOT IN (${skip.map((_, i) => `$${i + skipFrom}`).join(', ')})` : ''}
           AND webhook_id NOT IN (SELECT webhook_id FROM webhook_deliveries WHERE lease_until > $1)
         ORDER BY next_attempt_at, seq LIMIT $3`,
        params,
      )
      for (const r of rows) {
        if (seen.has(r.webhook_id)) continue
        seen.add(r.webhook_id)
        picked.push(r.id)
        if (picked.length === limit) return picked
      }
      const last = rows[rows.length - 1]
      if (!last || rows.length < page) return picked
      after = [Number(last.next_attempt_at), Number(last.seq)]
    }
  }

  /** Gives back every lease an owner holds (a stopping dispatcher); the rows stay pending with their attempts. */
  async releaseLeases(owner: string, now: number): Promise<number> {
    return this.db.run(
      `UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL, updated_at = $2
       WHERE lease_owner = $1 AND status = 'pending'`,
      [owner, now],
    )
  }

  /**
   * Records the outcomes of attempts `owner` made. PostgreSQL: one UPDATE joined to the outcomes as a VALUES list
   * (at most OUTCOME_CHUNK to a statement), not a round trip and a commit per attempt; SQLite: see recordEach. A row is written only while `owner` still holds its lease
   * at the attempt count it was claimed with, so an outcome whose lease was lost (lapsed and taken over) never
   * overwrites the newer one; the ids written are returned. The rows are found by id: `status || ''` keeps the
   * planners off the due index, which they would otherwise walk, every pending row of it, for the join.
   */
  async recordAttempts(owner: string, attempts: readonly AttemptRecord[]): Promise<Set<string>> {
    if (this.dialect === 'sqlite') return this.recordEach(owner, attempts)
    const recorded = new Set<string>()
    for (let from = 0; from < attempts.length; from += OUTCOME_CHUNK) {
      const chunk = attempts.slice(from, from + OUTCOME_CHUNK)
      const params: SqlValue[] = [owner]
      const values = chunk.map((attempt) => {
        const at = params.length
        params.push(attempt.id, attempt.attemptsBefore, ...outcomeColumns(attempt))
        const $ = (i: number) => `$${at + i}`
        // Typed, since PostgreSQL cannot infer a VALUES list's types from the columns it is compared with.
        return `(CAST(${$(1)} AS TEXT), CAST(${$(2)} AS INTEGER), CAST(${$(3)} AS TEXT), CAST(${$(4)} AS INTEGER),
          CAST(${$(5)} AS TEXT), CAST(${$(6)} AS BIGINT), CAST(${$(7)} AS BIGINT), CAST(${$(8)} AS BIGINT))`
      })
      const rows = await this.db.query<{ id: string }>(
        `WITH outcome (delivery_id, attempts_before, new_status, status_code, error, next_at, delivered, at) AS (
           VALUES ${values.join(', ')}
         )
         UPDATE webhook_deliveries SET status = outcome.new_status, attempts = outcome.attempts_before + 1,
           last_status_code = outcome.status_code, last_error = outcome.error, next_attempt_at = outcome.next_at,
           delivered_at = outcome.delivered, lease_owner = NULL, lease_until = NULL, updated_at = outcome.at
         FROM outcome
         WHERE webhook_deliveries.id = outcome.delivery_id AND webhook_deliveries.lease_owner = $1
           AND webhook_deliveries.attempts = outcome.attempts_before AND webhook_deliveries.status || '' = 'pending'
         RETURNING webhook_deliveries.id`,
        params,
      )
      for (const r of rows) recorded.add(r.id)
    }
    return recorded
  }

  /**
   * SQLite: one UPDATE per outcome, all issued at once, so they join one transaction (the driver's group commit);
   * cheaper there than the joined UPDATE, which builds the VALUES list as a table first.
   */
  private async recordEach(owner: string, attempts: readonly AttemptRecord[]): Promise<Set<string>> {
    const written = await Promise.all(
      attempts.map(async (attempt) => {
        const changed = await this.db.run(
          `UPDATE webhook_deliveries SET status = $1, last_status_code = $2, last_error = $3, next_attempt_at = $4,
             delivered_at = $5, updated_at = $6, attempts = $7, lease_owner = NULL, lease_until = NULL
           WHERE id = $8 AND lease_owner = $9 AND attempts = $10 AND status = 'pending'`,
          [...outcomeColumns(attempt), attempt.attemptsBefore + 1, attempt.id, owner, attempt.attemptsBefore],
        )
        return changed > 0 ? attempt.id : null
      }),
    )
    return new Set(written.filter((id): id is string => id !== null))
  }

  /** Starts a fresh round of attempts (manual redeliver); refused while an attempt holds the lease. */
  async requeue(id: string, now: number): Promise<boolean> {
    const changed = await this.db.run(
      `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $1, delivered_at = NULL,
         lease_owner = NULL, lease_until = NULL, updated_at = $1
       WHERE id = $2 AND (lease_until IS NULL OR lease_until <= $1)`,
      [now, id],
    )
    return changed > 0
  }

  /** Drops what a deleted subscription still had to send. */
  async dropPending(webhookId: string): Promise<number> {
    return this.db.run("DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending'", [
      webhookId,
    ])
  }
}
