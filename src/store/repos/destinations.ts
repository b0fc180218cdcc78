import type { DestinationRepository, SeenSignatures } from '../../domain/destinations/ports.js'
import {
  type DestinationChanges,
  type DestinationRecord,
  isDestinationType,
  type NewDestination,
} from '../../domain/destinations/types.js'
import type { Slice } from '../../domain/pagination.js'
import type { EventKind } from '../../domain/webhooks/body.js'
import type { DeliveryRepository } from '../../domain/webhooks/ports.js'
import { type Db, fromJson, hotPath, type Queryable, toJson } from '../db.js'
import { lookAheadLimit, toSlice } from '../paging.js'
import { DeliveryRepo } from './deliveries.js'
import { advanceFanoutCursor, readFanoutCursor } from './fanout-cursor.js'
import { SlackSignatureRepo } from './slack-signatures.js'

interface RawDestination extends Record<string, unknown> {
  seq: number | string
  id: string
  workspace_id: string
  type: string
  name: string
  events: string
  agent_ids: string | null
  config: string
  secrets: string
  status: string
  after_event_seq: number | string
  created_at: number | string
  updated_at: number | string
  deleted_at: number | string | null
}

function toDestination(r: RawDestination): DestinationRecord {
  if (!isDestinationType(r.type)) throw new Error(`destination ${r.id} has an unknown type ${r.type}`)
  return {
    seq: Number(r.seq),
    id: r.id,
    workspaceId: r.workspace_id,
    type: r.type,
    name: r.name,
    events: fromJson<EventKind[]>(r.events),
    agentIds: r.agent_ids === null ? null : fromJson<string[]>(r.agent_ids),
    config: fromJson<Record<string, unknown>>(r.config),
    secrets: fromJson<Record<string, string>>(r.secrets),
    status: r.status === 'disabled' ? 'disabled' : 'active',
    afterEventSeq: Number(r.after_event_seq),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    deletedAt: r.deleted_at === null ? null : Number(r.deleted_at),
  }
}

/** Destinations; every read is workspace-scoped except the fan-out's, which is by workspace list. */
export class DestinationRepo implements DestinationRepository {
  constructor(
    private readonly db: Queryable,
    /**
     * Where the fan-out's look for any destination goes, a lock-free read made after every commit that appends
     * events: the hot path (pipelined on PostgreSQL, sharing a write with the change notification and the
     * webhooks' same look), not a connection of the pool of its own.
     */
    private readonly reads: Queryable = db,
  ) {}

  in(tx: Queryable): DestinationRepo {
    return new DestinationRepo(tx)
  }

  async insert(d: NewDestination): Promise<DestinationRecord> {
    const row = await this.db.one<RawDestination>(
      `INSERT INTO destinations (id, workspace_id, type, name, events, agent_ids, config, secrets, status,
         after_event_seq, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *`,
      [
        d.id,
        d.workspaceId,
        d.type,
        d.name,
        toJson(d.events),
        d.agentIds === null ? null : toJson(d.agentIds),
        toJson(d.config),
        toJson(d.secrets),
        d.status,
        d.afterEventSeq,
        d.createdAt,
        d.updatedAt,
      ],
    )
    if (!row) throw new Error('destination insert returned no row')
    return toDestination(row)
  }

  async get(workspaceId: string, id: string): Promise<DestinationRecord | undefined> {
    const row = await this.db.one<RawDestination>(
      'SELECT * FROM destinations WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL',
      [workspaceId, id],
    )
    return row ? toDestination(row) : undefined
  }

  async getMany(
    keys: readonly { workspaceId: string; id: string }[],
  ): Promise<Map<string, DestinationRecord>> {
    const found = new Map<string, DestinationRecord>()
    if (keys.length === 0) return found
    const ids = [...new Set(keys.map((k) => k.id))]
    const rows = await this.db.query<RawDestination>(
      `SELECT * FROM destinations WHERE deleted_at IS NULL AND id IN (${ids.map((_, i) => `$${i + 1}`).join(', ')})`,
      ids,
    )
    // Each id counts only in the workspace it was asked for.
    const asked = new Map(keys.map((k) => [k.id, k.workspaceId]))
    for (const row of rows) {
      const record = toDestination(row)
      if (asked.get(record.id) === record.workspaceId) found.set(record.id, record)
    }
    return found
  }

  async byId(id: string): Promise<DestinationRecord | undefined> {
    const row = await this.db.one<RawDestination>(
      'SELECT * FROM destinations WHERE id = $1 AND deleted_at IS NULL',
      [id],
    )
    return row ? toDestination(row) : undefined
  }

  async list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<DestinationRecord>> {
    const rows = await this.db.query<RawDestination>(
      `SELECT * FROM destinations WHERE workspace_id = $1 AND deleted_at IS NULL AND seq > $2
       ORDER BY seq LIMIT $3`,
      [workspaceId, afterSeq, lookAheadLimit(limit)],
    )
    return toSlice(rows.map(toDestination), limit)
  }

  async update(id: string, c: DestinationChanges): Promise<void> {
    await this.db.run(
      `UPDATE destinations SET name = $1, events = $2, agent_ids = $3, config = $4, secrets = $5, status = $6,
         updated_at = $7
       WHERE id = $8 AND deleted_at IS NULL`,
      [
        c.name,
        toJson(c.events),
        c.agentIds === null ? null : toJson(c.agentIds),
        toJson(c.config),
        toJson(c.secrets),
        c.status,
        c.updatedAt,
        id,
      ],
    )
  }

  async markDeleted(id: string, now: number): Promise<boolean> {
    return (
      (await this.db.run(
        "UPDATE destinations SET deleted_at = $1, status = 'disabled' WHERE id = $2 AND deleted_at IS NULL",
        [now, id],
      )) > 0
    )
  }

  async activeIn(workspaceIds: readonly string[]): Promise<DestinationRecord[]> {
    if (workspaceIds.length === 0) return []
    const marks = workspaceIds.map((_, i) => `$${i + 1}`).join(', ')
    const rows = await this.db.query<RawDestination>(
      `SELECT * FROM destinations WHERE deleted_at IS NULL AND status = 'active' AND workspace_id IN (${marks})`,
      workspaceIds,
    )
    return rows.map(toDestination)
  }

  async minAfterSeq(): Promise<number | null> {
    const row = await this.reads.one<{ m: number | string | null }>(
      "SELECT MIN(after_event_seq) AS m FROM destinations WHERE deleted_at IS NULL AND status = 'active'",
    )
    return row?.m === null || row?.m === undefined ? null : Number(row.m)
  }

  cursor(name: string): Promise<number> {
    return readFanoutCursor(this.db, name)
  }

  advanceCursor(name: string, seq: number): Promise<void> {
    return advanceFanoutCursor(this.db, name, seq)
  }
}

/** The destinations, their rows of the shared delivery outbox and the Slack clicks seen, bound to one Db. */
export function createDestinationRepositories(db: Db): {
  destinations: DestinationRepository
  deliveries: DeliveryRepository
  slackSignatures: SeenSignatures
} {
  return {
    destinations: new DestinationRepo(db, hotPath(db)),
    deliveries: new DeliveryRepo(db, 'destination'),
    slackSignatures: new SlackSignatureRepo(db),
  }
}
