import type { Slice } from '../../domain/pagination.js'
import type { EventKind } from '../../domain/webhooks/body.js'
import type { WebhookRepository } from '../../domain/webhooks/ports.js'
import type { NewWebhook, StoredSecret, WebhookRecord } from '../../domain/webhooks/types.js'
import { fromJson, type Queryable, toJson } from '../db.js'
import { lookAheadLimit, toSlice } from '../paging.js'
import { advanceFanoutCursor, readFanoutCursor } from './fanout-cursor.js'

interface RawWebhook extends Record<string, unknown> {
  seq: number | string
  id: string
  workspace_id: string
  url: string
  events: string
  secrets: string
  status: string
  after_event_seq: number | string
  created_at: number | string
  secret_rotated_at: number | string | null
  deleted_at: number | string | null
}

function nullableNumber(v: number | string | null): number | null {
  return v === null ? null : Number(v)
}

function toWebhook(r: RawWebhook): WebhookRecord {
  return {
    seq: Number(r.seq),
    id: r.id,
    workspaceId: r.workspace_id,
    url: r.url,
    events: fromJson<EventKind[]>(r.events),
    secrets: fromJson<StoredSecret[]>(r.secrets),
    status: r.status === 'disabled' ? 'disabled' : 'active',
    afterEventSeq: Number(r.after_event_seq),
    createdAt: Number(r.created_at),
    secretRotatedAt: nullableNumber(r.secret_rotated_at),
    deletedAt: nullableNumber(r.deleted_at),
  }
}

/** Subscriptions; every read is workspace-scoped except the fan-out's, which is by workspace list. */
export class WebhookRepo implements WebhookRepository {
  constructor(
    private readonly db: Queryable,
    /**
     * Where the fan-out's look for any subscription goes, a lock-free read made after every commit that appends
     * events: the hot path (pipelined on PostgreSQL, sharing a write with the change notification), not a
     * connection of the pool of its own.
     */
    private readonly reads: Queryable = db,
  ) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): WebhookRepo {
    return new WebhookRepo(tx)
  }

  async insert(w: NewWebhook): Promise<WebhookRecord> {
    const row = await this.db.one<RawWebhook>(
      `INSERT INTO webhooks (id, workspace_id, url, events, secrets, status, after_event_seq, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
      [
        w.id,
        w.workspaceId,
        w.url,
        toJson(w.events),
        toJson(w.secrets),
        w.status,
        w.afterEventSeq,
        w.createdAt,
      ],
    )
    if (!row) throw new Error('webhook insert returned no row')
    return toWebhook(row)
  }

  async get(workspaceId: string, id: string): Promise<WebhookRecord | undefined> {
    const row = await this.db.one<RawWebhook>(
      'SELECT * FROM webhooks WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL',
      [workspaceId, id],
    )
    return row ? toWebhook(row) : undefined
  }

  async getMany(keys: readonly { workspaceId: string; id: string }[]): Promise<Map<string, WebhookRecord>> {
    const found = new Map<string, WebhookRecord>()
    if (keys.length === 0) return found
    const ids = [...new Set(keys.map((k) => k.id))]
    const rows = await this.db.query<RawWebhook>(
      `SELECT * FROM webhooks WHERE deleted_at IS NULL AND id IN (${ids.map((_, i) => `$${i + 1}`).join(', ')})`,
      ids,
    )
    // Each id counts only in the workspace it was asked for.
    const asked = new Map(keys.map((k) => [k.id, k.workspaceId]))
    for (const row of rows) {
      const record = toWebhook(row)
      if (asked.get(record.id) === record.workspaceId) found.set(record.id, record)
    }
    return found
  }

  /** `limit` rows after `afterSeq` in creation order (callers ask for one more to detect a next page). */
  async list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<WebhookRecord>> {
    const rows = await this.db.query<RawWebhook>(
      `SELECT * FROM webhooks WHERE workspace_id = $1 AND deleted_at IS NULL AND seq > $2
       ORDER BY seq LIMIT $3`,
      [workspaceId, afterSeq, lookAheadLimit(limit)],
    )
    return toSlice(rows.map(toWebhook), limit)
  }

  /** Active subscriptions of these workspaces, for fanning events out. */
  async activeIn(workspaceIds: readonly string[]): Promise<WebhookRecord[]> {
    if (workspaceIds.length === 0) return []
    const marks = workspaceIds.map((_, i) => `$${i + 1}`).join(', ')
    const rows = await this.db.query<RawWebhook>(
      `SELECT * FROM webhooks WHERE deleted_at IS NULL AND status = 'active' AND workspace_id IN (${marks})`,
      workspaceIds,
    )
    return rows.map(toWebhook)
  }

  /** The smallest `after_event_seq` of any active subscription, or null when there is none. */
  async minAfterSeq(): Promise<number | null> {
    const row = await this.reads.one<{ m: number | string | null }>(
      "SELECT MIN(after_event_seq) AS m FROM webhooks WHERE deleted_at IS NULL AND status = 'active'",
    )
    return row?.m === null || row?.m === undefined ? null : Number(row.m)
  }

  async setSecrets(id: string, secrets: StoredSecret[], rotatedAt: number): Promise<void> {
    await this.db.run('UPDATE webhooks SET secrets = $1, secret_rotated_at = $2 WHERE id = $3', [
      toJson(secrets),
      rotatedAt,
      id,
    ])
  }

  async markDeleted(id: string, now: number): Promise<boolean> {
    return (
      (await this.db.run(
        "UPDATE webhooks SET deleted_at = $1, status = 'disabled' WHERE id = $2 AND deleted_at IS NULL",
        [now, id],
      )) > 0
    )
  }

  cursor(name: string): Promise<number> {
    return readFanoutCursor(this.db, name)
  }

  advanceCursor(name: string, seq: number): Promise<void> {
    return advanceFanoutCursor(this.db, name, seq)
  }
}
