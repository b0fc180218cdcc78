import type { Queryable, TxBound } from '../ports.js'
import type { EventRow } from './types.js'

export interface EventRepository extends TxBound<EventRepository> {
  /**
   * Appends one event, written when its transaction commits; sequence order equals commit order (see the store's
   * implementation).
   */
  append(e: Omit<EventRow, 'seq'>): Promise<void>
  after(seq: number, limit: number): Promise<EventRow[]>
  afterInWorkspace(workspaceId: string, seq: number, limit: number): Promise<EventRow[]>
  lastSeq(): Promise<number>
}

export interface DomainEvent {
  workspaceId: string
  kind: string
  /** The resource the event is about (run, agent, task, tool, connector). */
  subjectId: string
  data: Record<string, unknown>
}

export interface EventsPort {
  /** Appends inside the caller's transaction, so the event exists exactly when the change does. */
  append(tx: Queryable, event: DomainEvent): Promise<void>
  /** Wakes consumers after the transaction committed. */
  notify(): void
}
