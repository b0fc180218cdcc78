import type { Clock } from '../clock.js'
import { newId } from '../ids.js'
import type { Db, DomainEvent, EventRepository, EventsPort, Queryable } from '../ports.js'
import type { EventRow } from './types.js'

type Listener = () => void

/**
 * The durable event log. Producers append inside their own transaction (so an event exists exactly when its
 * change does) and call `notify()` after commit; consumers (webhook fan-out, the stream) read by sequence
 * number from a cursor they keep, and `subscribe` only tells them when to look again.
 */
export class EventLog implements EventsPort {
  private readonly listeners = new Set<Listener>()

  constructor(
    private readonly db: Db,
    private readonly repo: EventRepository,
    private readonly clock: Clock,
  ) {}

  async append(tx: Queryable, event: DomainEvent): Promise<void> {
    const ts = this.clock.now()
    await this.repo.in(tx).append(this.db.dialect, {
      id: newId('evt', ts),
      workspaceId: event.workspaceId,
      kind: event.kind,
      ts,
      subjectId: event.subjectId,
      data: event.data,
    })
  }

  notify(): void {
    for (const l of this.listeners) {
      try {
        l()
      } catch (err) {
        console.error('[events] listener failed:', err)
      }
    }
  }

  /** Calls `listener` after every commit that appended events; returns the unsubscribe function. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

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
