/**
 * A store's change feed, wrapped so that a change is told after its commit. The feed itself is the store's: in-process
 * on SQLite (one process owns the file), across replicas on PostgreSQL (src/store/postgres/change-feed.ts, built by
 * the PostgresDb itself, so a SQLite server never loads the PostgreSQL driver).
 */
import { type Change, type ChangeFeed, type ChangeListener, LocalChangeFeed } from '../domain/changes.js'
import type { FailureLog } from '../domain/failure-log.js'
import type { Db } from './db.js'

export interface ChangeFeedOptions {
  /** First reconnect delay after the LISTEN connection is lost; doubles up to `reconnectMaxMs`. */
  reconnectMinMs?: number
  reconnectMaxMs?: number
  /** Told each time the LISTEN connection is back after a loss (metrics). */
  onReconnected?: () => void
  /** Where a change listener that throws is logged; default standard error. */
  failures?: FailureLog
  /** Where connection losses and recoveries are logged; default the console. */
  log?: { warn(message: string): void; info(message: string): void }
}

/** The feed for a store: across replicas on PostgreSQL, in-process on SQLite (one process owns the file). */
export function openChangeFeed(db: Db, options: ChangeFeedOptions = {}): ChangeFeed {
  return new AfterCommitFeed(
    db,
    ownsChangeFeed(db) ? db.changeFeed(options) : new LocalChangeFeed(options.failures),
  )
}

/** A store whose changes reach other processes through the store itself (PostgreSQL's NOTIFY). */
export interface SharedChangeFeed {
  changeFeed(options: ChangeFeedOptions): ChangeFeed
}

function ownsChangeFeed(db: Db): db is Db & SharedChangeFeed {
  return 'changeFeed' in db && typeof db.changeFeed === 'function'
}

/**
 * A change published inside a unit of work is told once the unit committed (Db.afterCommit), and outside its
 * context: a listener that reads then sees the change, and the work it starts is not part of the unit.
 */
class AfterCommitFeed implements ChangeFeed {
  constructor(
    private readonly db: Db,
    private readonly feed: ChangeFeed,
  ) {}
  publish(change: Change): void {
    this.db.afterCommit(() => this.feed.publish(change))
  }
  subscribe(listener: ChangeListener): () => void {
    return this.feed.subscribe(listener)
  }
  flush(): Promise<void> {
    return this.feed.flush()
  }
  start(): Promise<void> {
    return this.feed.start()
  }
  stop(): Promise<void> {
    return this.feed.stop()
  }
}
