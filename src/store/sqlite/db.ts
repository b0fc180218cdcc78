import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { performance } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import type { Db, Queryable, Row, SqlValue } from '../db.js'
import { afterCommitOf, currentUnit, runInUnit, Unit } from '../unit-of-work.js'
import { WalCheckpointer } from './checkpointer.js'
import { OperatorSignal } from './operators.js'
import { type CachedStatement, SqliteQueryable, SqliteStatements, StatementCache } from './statements.js'
import { SqliteUsageLedger } from './usage-ledger.js'

/** Write commits after which checkpoints move to a worker thread: a busy server, not a one-off CLI command. */
/**
 * How every connection of the server and its commands is set up. `temp_store = MEMORY`: each request's writes run in
 * a savepoint of the batch they commit with, and SQLite keeps a savepoint's undo pages (its statement journal) in a
 * temporary file by default, one write system call per page a request first touches. In memory they cost a copy.
 * Durability is unchanged: that journal only undoes a savepoint inside an open transaction, a commit is durable in
 * the WAL, and a crash discards uncommitted work whatever the journal held.
 */
export const SQLITE_PRAGMAS = [
  'journal_mode = WAL',
  'busy_timeout = 5000',
  'foreign_keys = ON',
  'synchronous = NORMAL',
  'temp_store = MEMORY',
] as const

const CHECKPOINTER_AFTER_COMMITS = 100

/**
 * A FIFO lock: SQLite work is serialised so an open transaction never sees foreign statements. A single
 * statement is synchronous in better-sqlite3, so when nothing holds or awaits the lock it runs at once, with
 * no promise chain: most reads of a loaded server take that path. A free lock is taken at once too, and a released
 * one handed straight to its first waiter: a waiter costs one promise, a holder none of the lock's own.
 */
class Mutex {
  /** Whether a holder has the lock (from its taking until its release, or its hand-over to the next waiter). */
  private held = false
  /** Who waits for the lock, first first: each is resumed holding it. */
  private readonly waiters: (() => void)[] = []

  /** Runs `fn` now when the lock is free; otherwise queues it like `lock`. */
  run<T>(fn: () => T): Promise<T> {
    if (!this.held) {
      try {
        return Promise.resolve(fn())
      } catch (err) {
        return Promise.reject(err)
      }
    }
    return this.lock(async () => fn())
  }

  async lock<T>(fn: () => Promise<T>): Promise<T> {
    if (this.held) await new Promise<void>((resume) => this.waiters.push(resume))
    else this.held = true
    try {
      return await fn()
    } finally {
      const next = this.waiters.shift()
      // Handed over still held, so nothing that starts before the waiter resumes can slip in ahead of it.
      if (next) next()
      else this.held = false
    }
  }
}

/**
 * One SQLite transaction holding the writes of many callers (group commit). It is committed once the work queued
 * in the same turn of the event loop has run; every caller whose work wrote, or read what was written, hears
 * back only after that COMMIT, so nothing is acknowledged or shown before it is durable.
 */
class Batch {
  /** Whether anything in it wrote: its readers then wait for the COMMIT as its writers do. */
  dirty = false
  readonly committed: Promise<void>
  settle!: (error?: unknown) => void

  constructor() {
    this.committed = new Promise<void>((resolve, reject) => {
      this.settle = (error) => (error === undefined ? resolve() : reject(error))
    })
    // A batch whose only member failed has nobody waiting; its outcome is then nobody's business.
    this.committed.catch(() => {})
  }
}

/** A statement's result that may only be handed over once its batch is committed. */
class Held<R> {
  constructor(
    readonly value: R,
    readonly batch: Batch,
  ) {}
}

class BatchRolledBack extends Error {
  constructor(cause: unknown) {
    super('The store rolled back a group of changes', { cause })
  }
}

export class SqliteDb implements Db {
  readonly dialect = 'sqlite' as const
  private readonly mutex = new Mutex()
  private readonly sync: SqliteStatements
  private readonly direct: SqliteQueryable
  /** The open batch's quota counts, written at its COMMIT (usage-ledger.ts). */
  private readonly ledger: SqliteUsageLedger
  private batch: Batch | null = null
  /** Transaction control, prepared once: parsing these on every request showed up in the profile. */
  private readonly control: Record<
    'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo',
    Database.Statement
  >

  private writeCommits = 0
  private checkpointer: WalCheckpointer | null = null
  private observeTransaction: ((seconds: number) => void) | undefined

  /** Operators waiting for the write lock (src/store/sqlite/operators.ts); none in memory. */
  private readonly operators: OperatorSignal | null

  private constructor(
    private readonly raw: Database.Database,
    /** The database file; null in memory, where there is no WAL to checkpoint. */
    private readonly path: string | null,
    /** An operator's process (the CLI): its write transactions say they wait, so a busy server lets them in. */
    private readonly operator = false,
    /** Told once when an operator's write waits beyond one busy timeout for the lock (the CLI says so). */
    private readonly onOperatorWait?: (totalMs: number) => void,
  ) {
    this.operators = path ? new OperatorSignal(path) : null
    this.ledger = new SqliteUsageLedger(raw)
    this.sync = new SqliteStatements(new StatementCache(raw), () => this.ledger.flush())
    this.direct = new SqliteQueryable(this.sync, this.ledger)
    this.control = {
      begin: raw.prepare('BEGIN IMMEDIATE'),
      commit: raw.prepare('COMMIT'),
      rollback: raw.prepare('ROLLBACK'),
      savepoint: raw.prepare('SAVEPOINT tx'),
      release: raw.prepare('RELEASE tx'),
      rollbackTo: raw.prepare('ROLLBACK TO tx'),
    }
  }

  /**
   * Accepts `sqlite:path`, `file:path`, a bare path, or `:memory:`. `operator`: this process is an operator's
   * command (the CLI), whose writes a running server makes room for.
   */
  static open(
    url: string,
    options: { operator?: boolean; onOperatorWait?: (totalMs: number) => void } = {},
  ): SqliteDb {
    const path = url.replace(/^sqlite:(\/\/)?/, '').replace(/^file:(\/\/)?/, '') || ':memory:'
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    const raw = new Database(path)
    for (const pragma of SQLITE_PRAGMAS) raw.pragma(pragma)
    // An operator's command leaves checkpoints to the server: its COMMIT would otherwise copy a busy server's whole
    // WAL into the database file (SQLite checkpoints on the commit that finds the WAL past 1,000 pages). Alone, it
    // is the last connection, whose close checkpoints.
    if (options.operator === true) raw.pragma('wal_autocheckpoint = 0')
    return new SqliteDb(
      raw,
      path === ':memory:' ? null : path,
      options.operator === true,
      options.onOperatorWait,
    )
  }

  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.statement(sql, (s) => this.sync.queryWith<T>(s, params))
  }
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.statement(sql, (s) => this.sync.oneWith<T>(s, params))
  }
  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.statement(sql, (s) => this.sync.runWith(s, params))
  }

  timeTransactions(observe: (seconds: number) => void): void {
    this.observeTransaction = observe
  }

  /**
   * A logical transaction: a savepoint inside the open batch, so a failure undoes only its own work. It resolves
   * after the batch's COMMIT. Inside a unit of work it is part of the unit's savepoint (the unit holds the lock).
   */

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    if (currentUnit(this)) return fn(this.direct)
    const started = this.observeTransaction ? performance.now() : 0
    const { value, batch } = await this.inSavepoint(() => fn(this.direct))
    await batch.committed
    this.observeTransaction?.((performance.now() - started) / 1000)
    return value
  }

  /**
   * A unit of work: one savepoint in the open batch that holds the lock until fn settles, so every statement of
   * its context runs in it at once, and no other work interleaves. It resolves after the batch's COMMIT; what
   * waited for that COMMIT (`afterCommit`) runs then.
   */
  async unitOfWork<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    if (currentUnit(this)) return fn(this.direct)
    const unit = new Unit<Queryable>(this, this.direct)
    const { value, batch } = await this.inSavepoint(() => runInUnit(unit, () => fn(this.direct)))
    await batch.committed
    unit.committed()
    return value
  }

  /**
   * Runs `work` under the lock in a savepoint of the open batch (a transaction, or a unit of work): released into
   * the batch when it settles, rolled back with its error when it throws. The caller waits for the batch's COMMIT.
   */
  private inSavepoint<T>(work: () => Promise<T>): Promise<{ value: T; batch: Batch }> {
    return this.mutex.lock(async () => {
      const batch = this.openBatch()
      this.control.savepoint.run()
      this.ledger.mark()
      try {
        const value = await work()
        this.control.release.run()
        this.ledger.keep()
        batch.dirty = true
        return { value, batch }
      } catch (err) {
        this.undo(batch, err)
        throw err
      }
    })
  }

  afterCommit(fn: () => void): void {
    afterCommitOf(this, fn)
  }

  inUnitOfWork(): boolean {
    return currentUnit(this) !== undefined
  }

  exec(script: string): Promise<void> {
    if (currentUnit(this)) return this.direct.exec(script)
    return this.mutex.lock(async () => {
      this.commit(this.batch)
      await this.direct.exec(script)
    })
  }

  async close(): Promise<void> {
    await this.mutex.lock(async () => {
      this.commit(this.batch)
      await this.checkpointer?.stop()
      this.checkpointer = null
      this.raw.close()
    })
  }

  /**
   * One statement outside a transaction. A write joins the open batch (or opens one); a read runs at once, on its
   * own snapshot of committed data when no batch is open, else inside the batch, answered after the COMMIT if the
   * batch holds writes it may have seen.
   */
  private async statement<R>(sql: string, exec: (s: CachedStatement) => R): Promise<R> {
    // Inside a unit of work, which holds the lock: at once, in its savepoint; the unit waits for the COMMIT.
    if (currentUnit(this)) return exec(this.sync.statements.get(sql))
    const result = await this.mutex.run((): R | Held<R> => {
      const cached = this.sync.statements.get(sql)
      const writes = !cached.stmt.readonly
      const batch = writes ? this.openBatch() : this.batch
      if (!batch) return exec(cached)
      let value: R
      try {
        value = exec(cached)
      } catch (err) {
        // A failed statement undoes itself; only an error that ended the whole transaction touches the others.
        if (!this.raw.inTransaction) this.lost(batch, err)
        throw err
      }
      if (writes) batch.dirty = true
      return batch.dirty ? new Held(value, batch) : value
    })
    // Waited for outside the lock: the COMMIT itself needs it.
    if (!(result instanceof Held)) return result
    await result.batch.committed
    return result.value
  }

  /** The open batch, or a new one begun with the write lock and committed after the work queued in this turn. */
  private openBatch(): Batch {
    if (this.batch) return this.batch
    if (this.operator && this.operators)
      this.operators.whileWaiting(() => this.control.begin.run(), this.onOperatorWait)
    else this.control.begin.run()
    const batch = new Batch()
    this.batch = batch
    // After the work already queued (FIFO), before anything queued later: one COMMIT per turn of the loop. An
    // operator waiting for the write lock gets it before this server begins again.
    setImmediate(() => {
      void this.mutex.lock(async () => {
        this.commit(batch)
        if (this.operators?.operatorWaits()) await this.operators.yieldToOperators()
      })
    })
    return batch
  }

  private commit(batch: Batch | null): void {
    if (!batch || this.batch !== batch) return
    this.batch = null
    try {
      this.ledger.flush()
      this.control.commit.run()
    } catch (err) {
      if (this.raw.inTransaction) this.control.rollback.run()
      this.ledger.discard()
      batch.settle(new BatchRolledBack(err))
      return
    }
    batch.settle()
    if (this.path && !this.checkpointer && ++this.writeCommits >= CHECKPOINTER_AFTER_COMMITS) {
      this.raw.pragma('wal_autocheckpoint = 0')
      this.checkpointer = new WalCheckpointer(this.path)
    }
  }

  /** A failed logical transaction: back to its savepoint, or, if SQLite ended the whole transaction, fail the batch. */
  private undo(batch: Batch, err: unknown): void {
    if (!this.raw.inTransaction) {
      this.lost(batch, err)
      return
    }
    this.control.rollbackTo.run()
    this.control.release.run()
    this.ledger.undo()
  }

  /** SQLite rolled the whole transaction back (a disk or memory error): everyone in the batch hears of it. */
  private lost(batch: Batch, err: unknown): void {
    if (this.batch === batch) this.batch = null
    this.ledger.discard()
    batch.settle(new BatchRolledBack(err))
  }
}
