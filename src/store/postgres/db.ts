/**
 * The PostgreSQL store on postgres.js (the `postgres` package), through its public API only. postgres.js writes
 * every statement issued while the event loop is busy in one socket write and reads the answers in order
 * (pipelining) and prepares each statement text once per connection. Each connection is its own postgres.js
 * instance of one connection (see `Connection`), used three ways:
 *
 * - the hot path (`pipeline`): lock-free single statements (reads, rate counts, idempotency answers stored alone)
 *   pipelined on a few connections, each statement its own transaction (its own Sync);
 * - the pool's other single statements, each on a connection lent to it alone, so a statement that waits on a
 *   row lock never holds back another queued behind it on the same connection;
 * - transactions and units of work, on a connection lent to each: BEGIN goes out in the same write as the first
 *   statement, and the held-back statements (`CommitTail`) in the same write as the COMMIT;
 * - deferred units of work (all of whose statements are held back), whole at their commit, pipelined on a few
 *   connections they share (`DeferredTransaction`).
 */
import { performance } from 'node:perf_hooks'
import type { ChangeFeed } from '../../domain/changes.js'
import { DeferredCommitRefused } from '../../domain/ports.js'
import {
  commitTailOf,
  type Db,
  ForwardingQueryable,
  type Pipelined,
  type Queryable,
  RefusedAtCommit,
  type StatementPath,
  type StatementTiming,
  settledFailure,
  type TransactionTiming,
} from '../db.js'
import type { PoolFigures } from '../gauges.js'
import type { ChangeFeedOptions, SharedChangeFeed } from '../notifications.js'
import { afterCommitOf, currentUnit, JoiningQueryable, runInUnit, Unit } from '../unit-of-work.js'
import { PgChangeFeed } from './change-feed.js'
import { ConnectionPool, SharedConnections } from './connections.js'
import {
  DeferredTransaction,
  PgTransaction,
  PipelinedQueryable,
  PooledQueryable,
  Timing,
} from './statements.js'

/** At most this many connections per replica for transactions and pooled statements. */
const POOL_MAX = 10
/**
 * Pipelined connections of the hot path. With synchronous commit every write waits for its WAL flush before the
 * next statement on its connection runs; several connections let those waits overlap, where one would hold
 * every pipelined statement behind one flush at a time (docs/performance.md, bench:http on PostgreSQL).
 */
const PIPELINE_MAX = 4
/**
 * Connections the deferred units' commits share: one. Every deferred unit appends an event, and the event log's
 * ordering lock is held from that append to the end of its COMMIT (WAL flush included), so deferred units commit
 * one at a time however many connections carry them. On one connection they wait in its pipeline, in order, instead
 * of in several backends asleep on the lock, each woken in turn (a context switch per unit on the database's
 * cores), and the server sends and reads them in shared socket writes and reads, which costs less server CPU per
 * keyed POST than several connections (`npm run bench:observability -- --route post-keyed --postgres`; figures in
 * docs/performance.md).
 */
const DEFERRED_MAX = 1

export class PostgresDb
  extends ForwardingQueryable
  implements Db, Pipelined, TransactionTiming, StatementTiming, PoolFigures, SharedChangeFeed
{
  readonly dialect = 'postgres' as const
  private readonly direct: PooledQueryable
  private readonly timing = new Timing()
  private observeTransaction: ((seconds: number) => void) | undefined
  /** Independent single statements on the hot path, pipelined. */
  readonly pipeline: PipelinedQueryable
  /** The hot path as repositories use it: the pipeline, or the open unit of work's transaction (db.ts hotPath). */
  readonly hot: Queryable
  /**
   * Where deferred units commit: connections of their own, so a pipelined read never queues behind a unit's
   * statement that waits for a lock.
   */
  private readonly deferred: SharedConnections

  private constructor(
    private readonly pool: ConnectionPool,
    /** Where the change feed opens its own LISTEN connection (src/store/postgres/change-feed.ts). */
    readonly url: string,
  ) {
    super()
    this.direct = new PooledQueryable(pool, this.timing)
    this.pipeline = new PipelinedQueryable(url, PIPELINE_MAX, this.timing)
    this.hot = new JoiningQueryable(this, this.pipeline)
    this.deferred = new SharedConnections(url, DEFERRED_MAX, 'agentops-deferred')
  }

  static async connect(url: string): Promise<PostgresDb> {
    const db = new PostgresDb(new ConnectionPool(url, POOL_MAX), url)
    try {
      await db.query('SELECT 1')
    } catch (err) {
      await db.close().catch(() => {})
      throw err
    }
    return db
  }

  /** Changes told to every replica on this database: NOTIFY after commit, one LISTEN connection per process. */
  changeFeed(options: ChangeFeedOptions): ChangeFeed {
    return new PgChangeFeed(this.url, this.pipeline, options)
  }

  /** Outside a unit of work, a pooled connection; inside one, the unit's transaction. */
  protected target(): Queryable {
    return currentUnit<Queryable>(this)?.tx ?? this.direct
  }

  timeTransactions(observe: (seconds: number) => void): void {
    this.observeTransaction = observe
  }
  timeStatements(observe: (path: StatementPath, seconds: number) => void): void {
    this.timing.observe = observe
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const unit = currentUnit<Queryable>(this)
    if (unit) return fn(unit.tx)
    return this.transact(fn)
  }

  /**
   * A unit of work: one transaction on one lent connection that every statement of fn's context joins; its
   * held-back statements (event appends, the idempotency answer) go out with the COMMIT.
   */
  async unitOfWork<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const open = currentUnit<Queryable>(this)
    if (open) return fn(open.tx)
    let unit: Unit<PgTransaction> | undefined
    const value = await this.transact((tx) => {
      unit = new Unit(this, tx)
      return runInUnit(unit, () => fn(tx))
    })
    unit?.committed()
    return value
  }

  async deferredUnitOfWork<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const open = currentUnit<Queryable>(this)
    if (open) return fn(open.tx)
    const started = this.observeTransaction ? performance.now() : 0
    const tx = new DeferredTransaction(this.deferred, this.timing)
    const unit = new Unit<Queryable>(this, tx)
    const value = await runInUnit(unit, () => fn(tx))
    try {
      await tx.commit()
    } catch (err) {
      // A write the unit's own statement refused (a quota's count): the caller's error, not the store's.
      if (err instanceof RefusedAtCommit) throw await err.refusal.settle()
      const after = unit.handOver()
      throw new DeferredCommitRefused(err, () => {
        const next = currentUnit<Queryable>(this)
        const tail = next && commitTailOf(next.tx)
        if (!next || !tail)
          throw new Error('A refused unit resumes only inside another unit of the same store')
        tx.writes.handTo(tail)
        for (const fn of after) next.defer(fn)
      })
    }
    this.observeTransaction?.((performance.now() - started) / 1000)
    unit.committed()
    return value
  }

  afterCommit(fn: () => void): void {
    afterCommitOf(this, fn)
  }

  inUnitOfWork(): boolean {
    return currentUnit(this) !== undefined
  }

  private async transact<T>(fn: (tx: PgTransaction) => Promise<T>): Promise<T> {
    const started = this.observeTransaction ? performance.now() : 0
    const connection = await this.pool.acquire()
    const tx = new PgTransaction(connection, this.timing)
    let failure: unknown
    try {
      const result = await fn(tx)
      await tx.commit()
      this.observeTransaction?.((performance.now() - started) / 1000)
      return result
    } catch (err) {
      await tx.rollback()
      failure = err
    } finally {
      this.pool.release(connection)
    }
    // Worded once the connection is back in the pool: the refusal's wording may read the store.
    throw await settledFailure(failure)
  }

  /** The pool's capacity, the part of it not lent, and the callers waiting for a connection (metrics). */
  poolFigures(): { total: number; idle: number; waiting: number } {
    return this.pool.figures()
  }

  async close(): Promise<void> {
    await Promise.all([this.pipeline.close(), this.deferred.close(), this.pool.end()])
  }
}
