import { type ChangeFeed, LocalChangeFeed } from '../changes.js'
import type { Clock } from '../clock.js'
import { newId } from '../ids.js'
import type { Queryable } from '../ports.js'
import type { DomainEvent, EventRepository, EventsPort } from './ports.js'
import type { EventRow } from './types.js'

type Listener = () => void

/**
 * The durable event log. Producers append inside their own transaction (so an event exists exactly when its
 * change does) and call `notify()` after commit; consumers (webhook fan-out, the stream) read by sequence
 * number from a cursor they keep, and `subscribe` only tells them when to look again.
 */
export class EventLog implements EventsPort {
  constructor(
    private readonly repo: EventRepository,
    private readonly clock: Clock,
    private readonly changes: ChangeFeed = new LocalChangeFeed(),
  ) {}

  async append(tx: Queryable, event: DomainEvent): Promise<void> {
    const ts = this.clock.now()
    await this.repo.in(tx).append({
      // Stryker disable next-line StringLiteral: an id's prefix is the reference's choice (§6 shows an event's id as a string).
      id: newId('evt', ts),
      workspaceId: event.workspaceId,
      kind: event.kind,
      ts,
      subjectId: event.subjectId,
      data: event.data,
    })
  }

  /**
   * After a commit that appended events: the stream's `runs` topics read them at once (their fallback poll is the
   * net for a wake-up lost), and the outbox sends them.
   */
  notify(): void {
    this.changes.publish({ kind: 'events' })
  }

  // Stryker disable all: the outbox's wake-up only (its one listener), which no answer depends on: the outbox also looks on its own timer (its poll, which also brings its retries due), so every event still reaches it, only later; how soon is not in the spec (§6 shows no delivery delay).
  /**
   * Calls `listener` after every commit that appended events, on any replica (and when wake-ups may have been
   * missed); returns the unsubscribe function.
   */
  subscribe(listener: Listener): () => void {
    return this.changes.subscribe((c) => {
      if (c.kind === 'events' || c.kind === 'resync') listener()
    })
  }
  // Stryker restore all

  /** Events with seq > `afterSeq`, oldest first. */
  read(afterSeq: number, limit = 500): Promise<EventRow[]> {
    return this.repo.after(afterSeq, limit)
  }

  readWorkspace(workspaceId: string, afterSeq: number, limit = 500): Promise<EventRow[]> {
    return this.repo.afterInWorkspace(workspaceId, afterSeq, limit)
  }

  lastSeq(): Promise<number> {
    return this.repo.lastSeq()
  }
}
