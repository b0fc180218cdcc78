/**
 * Wake-ups after commits. A change says only WHERE to look again (the event log, a connector's records, a run's
 * frames); what there is to see is always read from the durable tables by sequence number. So a wake-up that is
 * lost or doubled only delays or repeats a read: it can never lose, duplicate or reorder a delivered item.
 */
import { CONSOLE_FAILURE_LOG, type FailureLog } from './failure-log.js'
export type Change =
  /** Events were appended to the log. */
  | { kind: 'events' }
  /** Records landed on a connector. */
  | { kind: 'records'; workspaceId: string; connectorId: string; lastSeq: number }
  /** A run changed (status, frames). */
  | { kind: 'run'; runId: string }
  /** An API key was revoked: every replica closes the sockets it authenticated, at once. */
  | { kind: 'key'; keyId: string }
  /** Wake-ups may have been missed (the feed reconnected): every consumer should look again. */
  | { kind: 'resync' }

export type ChangeListener = (change: Change) => void

export interface ChangeFeed {
  /** Called after the transaction that made the change committed; tells this process and every other replica. */
  publish(change: Change): void
  /** Every change published here or by another replica; returns the unsubscribe function. */
  subscribe(listener: ChangeListener): () => void
  /** Resolves once every change published so far has left for the other replicas (a CLI exits after). */
  flush(): Promise<void>
  /** Begins hearing other replicas (no-op for an in-process feed). */
  start(): Promise<void>
  stop(): Promise<void>
}

/** Calls every listener; one that throws cannot keep the others from hearing the change. */
export class ChangeListeners {
  private readonly listeners = new Set<ChangeListener>()

  constructor(private readonly failures: FailureLog = CONSOLE_FAILURE_LOG) {}

  add(listener: ChangeListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  deliver(change: Change): void {
    for (const l of this.listeners) {
      try {
        l(change)
      } catch (err) {
        this.failures.error({ err }, 'change listener failed')
      }
    }
  }
}

/** One process: a change is heard by this process's listeners only (SQLite, tests). */
export class LocalChangeFeed implements ChangeFeed {
  private readonly listeners: ChangeListeners

  constructor(failures?: FailureLog) {
    this.listeners = new ChangeListeners(failures)
  }

  publish(change: Change): void {
    this.listeners.deliver(change)
  }

  subscribe(listener: ChangeListener): () => void {
    return this.listeners.add(listener)
  }

  async flush(): Promise<void> {}
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
}
