import { toRfc3339 } from '../domain/clock.js'
import type { EventLog } from '../domain/events/log.js'
import type { EventRow } from '../domain/events/types.js'
import type { IngestionService } from '../domain/ingestion/service.js'
import type { StreamServerMessage } from './contract-types.js'

/** One data message of a topic, with the per-topic sequence number it is delivered under. */
export interface StreamItem {
  seq: number
  message: StreamServerMessage
}

/** Most messages replayed per topic on a `since` resume (stream and GraphQL subscriptions); older ones are a gap. */
export const MAX_REPLAY = 1000

export interface ResumePoint {
  /** Deliver items with seq greater than this. */
  after: number
  /** Missed items that are too many to replay: the client is told, then gets the newest ones. */
  gap?: { from: number; to: number }
}

/**
 * Where a topic's messages come from. Every delivery is "read after the last seq sent", for replay and live
 * alike, so the seam between them can neither duplicate nor reorder anything.
 */
export interface TopicSource {
  /** The newest seq now: delivery starts after it when the client gives no `since`. */
  head(): Promise<number>
  resume(since: number, maxReplay: number): Promise<ResumePoint>
  /**
   * Items after `after`, oldest first; continue after `scannedTo` (≥ `after` and every item's seq, may skip filtered
   * seqs).
   */
  read(after: number, limit: number): Promise<TopicPage>
}

export interface TopicPage {
  items: StreamItem[]
  scannedTo: number
  /**
   * Whether the read stopped at its limit, so more may follow at once. False: it reached what was committed when
   * it ran (a later commit brings its own wake-up). Absent: unknown, and the reader reads again until a read finds
   * nothing.
   */
  more?: boolean
}

/** Whether a reader that read `page` after `after` has caught up with what was committed when the read ran. */
export function caughtUp(page: TopicPage, after: number): boolean {
  if (page.more !== undefined) return !page.more
  return page.items.length === 0 && page.scannedTo <= after
}

/** What a `connector:<id>` topic reads of the ingestion service. */
export type RecordReader = Pick<IngestionService, 'lastSeq' | 'recordsAfter'>

/** What the `runs` topic reads of the event log. */
export type RunEventReader = Pick<EventLog, 'lastSeq' | 'readWorkspace'>

/** `connector:<id>`: the workspace's records of that connector; seq is the record's dense per-connector seq. */
export function connectorSource(
  ingestion: RecordReader,
  workspaceId: string,
  connectorId: string,
  topic: string,
): TopicSource {
  return {
    head: () => ingestion.lastSeq(workspaceId, connectorId),
    async resume(since, maxReplay) {
      const last = await ingestion.lastSeq(workspaceId, connectorId)
      if (last - since <= maxReplay) return { after: since }
      return { after: last - maxReplay, gap: { from: since + 1, to: last - maxReplay } }
    },
    async read(after, limit) {
      const { rows: records, more } = await ingestion.recordsAfter(workspaceId, connectorId, after, limit)
      const items = records.map(
        (record): StreamItem => ({
          seq: record.seq,
          message: { type: 'record', topic, seq: record.seq, record },
        }),
      )
      return { items, scannedTo: records.at(-1)?.seq ?? after, more }
    },
  }
}

/** Run lifecycle events and policy refusals; other kinds (agents, tools, ingest) are not part of `runs`. */
export function isRunEvent(kind: string): boolean {
  return kind.startsWith('run.') || kind === 'policy.denied'
}

export function presentEvent(e: EventRow): Record<string, unknown> {
  return { ...e.data, id: e.id, event: e.kind, ts: toRfc3339(e.ts) }
}

const SCAN_PAGE = 500

/** `runs`: the workspace's run events from the durable log; seq is the log's global seq (increasing, not dense). */
export function runsSource(events: RunEventReader, workspaceId: string): TopicSource {
  return {
    head: () => events.lastSeq(),
    async resume(since, maxReplay) {
      // Keep only the seqs of the newest maxReplay + 1 matches, so the scan's memory stays bounded.
      const ring: number[] = []
      let total = 0
      let cursor = since
      for (;;) {
        const rows = await events.readWorkspace(workspaceId, cursor, SCAN_PAGE)
        for (const row of rows) {
          if (!isRunEvent(row.kind)) continue
          total++
          ring.push(row.seq)
          if (ring.length > maxReplay + 1) ring.shift()
        }
        if (rows.length < SCAN_PAGE) break
        cursor = rows.at(-1)?.seq ?? cursor
      }
      if (total <= maxReplay) return { after: since }
      const lastSkipped = ring[0] as number
      return { after: lastSkipped, gap: { from: since + 1, to: lastSkipped } }
    },
    async read(after, limit) {
      const rows = await events.readWorkspace(workspaceId, after, limit)
      const items = rows
        .filter((r) => isRunEvent(r.kind))
        .map(
          (r): StreamItem => ({
            seq: r.seq,
            message: { type: 'event', topic: 'runs', seq: r.seq, event: presentEvent(r) },
          }),
        )
      return { items, scannedTo: rows.at(-1)?.seq ?? after, more: rows.length >= limit }
    },
  }
}
