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
import postgres from 'postgres'
import { DeferredCommitRefused } from '../domain/ports.js'
import {
  type CommitTail,
  commitTailOf,
  type Db,
  ForwardingQueryable,
  normaliseParams,
  type Pipelined,
  type Queryable,
  type Row,
  SendingQueryable,
  type SqlValue,
  type StatementPath,
  type StatementResult,
  type StatementTiming,
  type TransactionTiming,
} from './db.js'
import type { PoolFigures } from './gauges.js'
import { asOneStatement } from './one-statement.js'
import { afterCommitOf, currentUnit, JoiningQueryable, runInUnit, Unit } from './unit-of-work.js'

/** Options every postgres.js instance of the store shares (the change feed's LISTEN connection included). */
export function driverOptions(applicationName: string) {
  return {
    // int8 (COUNT, BIGINT, BIGSERIAL) arrives as text; our values stay far below 2^53.
    types: {
      int8: { to: 20, from: [20], parse: (v: string) => Number(v), serialize: (v: number) => String(v) },
      // A value bound to a json parameter is JSON text already (SQL is written once for both drivers); postgres.js
      // would otherwise encode it again, as a JSON string.
      json: {
        to: 114,
        from: [114, 3802],
        parse: (v: string): unknown => JSON.parse(v),
        serialize: (v: string) => v,
      },
    },
    // A ROLLBACK after a failed COMMIT warns "no transaction in progress": nothing an operator needs to read.
    onnotice: () => {},
    // No lifetime closing (and no `idle_timeout`, off by default): postgres.js counts a connection idle between two
    // statements of a transaction on it, and would close it there, rolling the transaction back.
    max_lifetime: null,
    connection: { application_name: applicationName },
  }
}

function openDriver(url: string, applicationName: string, onclose: () => void) {
  return postgres(url, { ...driverOptions(applicationName), max: 1, onclose })
}

type Driver = ReturnType<typeof openDriver>

/**
 * Seconds a closing store waits for statements in flight before it drops its connections. postgres.js would
 * otherwise wait for ever on a connection the server dropped in the middle of a statement.
 */
const CLOSE_TIMEOUT_S = 5

/**
 * One connection: a postgres.js instance of at most one connection, which pipelines what is sent to it. Once
 * its connection closed (the server restarted, the network failed, it sat idle), the instance is never used
 * again: the next use gets a fresh one. postgres.js 3.4 would reconnect it, but a connection that closed while
 * reserved or while a write was buffered can then crash the process or never write again (porsager/postgres
 * #1199, #1208); and a transaction must not go on, unknowingly, on a new session.
 */
class Connection {
  private current: Driver
  /** Whether `current` closed: what was sent on it has failed or finished, and nothing more may go. */
  lost = false
  /** Statements sent on it and not yet answered (the pipeline's choice of connection). */
  load = 0

  constructor(
    private readonly url: string,
    private readonly applicationName: string,
  ) {
    this.current = this.open()
  }

  private open(): Driver {
    const driver: Driver = openDriver(this.url, this.applicationName, () => {
      if (this.current === driver) this.lost = true
    })
    return driver
  }

  /** The instance to send on; a lost one is replaced first. */
  get driver(): Driver {
    if (this.lost) this.renew()
    return this.current
  }

  renew(): void {
    void this.current.end({ timeout: 0 }).catch(() => {})
    this.current = this.open()
    this.lost = false
  }

  end(): Promise<void> {
    return this.current.end({ timeout: CLOSE_TIMEOUT_S })
  }
}

/** A bound value as postgres.js takes it: a bigint as its decimal text (the server casts it to the column's type). */
function toDriverParams(params: readonly SqlValue[] | undefined) {
  return normaliseParams(params).map((p) => (typeof p === 'bigint' ? p.toString() : p))
}

/** Statement latency, told to the observer when one is set (metrics). */
class Timing {
  observe: ((path: StatementPath, seconds: number) => void) | undefined

  async run(
    path: StatementPath,
    target: Driver,
    text: string,
    params: readonly SqlValue[] | undefined,
  ): Promise<StatementResult> {
    const observe = this.observe
    const started = observe ? performance.now() : 0
    // Sent now, not when first awaited: statements go out in the order they were issued (see PgTransaction).
    const rows = await target.unsafe(text, toDriverParams(params), { prepare: true }).execute()
    observe?.(path, (performance.now() - started) / 1000)
    return { rows, rowCount: rows.count }
  }
}

/**
 * In-flight statements on a pipelined connection before the next connection takes new statements. On GET
 * /v1/runs/{id} at 50 connections, 16 cost about 15% less server CPU than 4 (bigger writes), 8 sits between; with
 * synchronous commit, statements then spill over to further connections, whose WAL flushes overlap.
 */
const SPILL = 8

/**
 * A few connections that many callers share, each statement sent at once on one of them (pipelining); `load` counts
 * what is in flight on each.
 */
class SharedConnections {
  private readonly connections: Connection[]

  constructor(url: string, size: number, applicationName: string) {
    this.connections = Array.from({ length: size }, () => new Connection(url, applicationName))
  }

  /**
   * The first connection with fewer than SPILL statements in flight, else the least loaded: a fast server keeps
   * the first one's queue short, so statements share its writes and reads; a slow commit lets queues grow and
   * spill over to further connections, opened only then.
   */
  pick(): Connection {
    let best = this.connections[0] as Connection
    for (const c of this.connections) {
      if (c.load < SPILL) return c
      if (c.load < best.load) best = c
    }
    return best
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.end()))
  }
}

/** Lock-free single statements, pipelined on a few connections (see the module's comment). */
class PipelinedQueryable extends SendingQueryable {
  private readonly connections: SharedConnections

  constructor(
    url: string,
    connections: number,
    private readonly timing: Timing,
  ) {
    super()
    this.connections = new SharedConnections(url, connections, 'agentops-pipeline')
  }

  protected async send(sql: string, params?: readonly SqlValue[]): Promise<StatementResult> {
    const connection = this.connections.pick()
    connection.load++
    try {
      return await this.timing.run('pipeline', connection.driver, sql, params)
    } finally {
      connection.load--
    }
  }

  async exec(): Promise<void> {
    throw new Error('The pipeline runs single statements only')
  }

  close(): Promise<void> {
    return this.connections.close()
  }
}

/**
 * Connections lent to one caller at a time (a transaction, or one statement), with callers waiting in turn when
 * all are lent; counted here, so a metrics scrape can read how many are lent and waited for.
 */
class ConnectionPool {
  private readonly all: Connection[]
  private readonly free: Connection[]
  private readonly waiting: ((c: Connection) => void)[] = []
  private lent = 0
  private closed = false

  constructor(
    url: string,
    private readonly size: number,
  ) {
    this.all = Array.from({ length: size }, () => new Connection(url, 'agentops'))
    this.free = [...this.all]
  }

  acquire(): Promise<Connection> {
    if (this.closed) return Promise.reject(new Error('The store is closed'))
    const c = this.free.pop()
    if (c) {
      this.lent++
      return Promise.resolve(c)
    }
    return new Promise((resolve) => this.waiting.push(resolve))
  }

  release(c: Connection): void {
    // A connection lost while lent is replaced: its session (and any transaction on it) is gone.
    if (c.lost) c.renew()
    const next = this.waiting.shift()
    if (next) next(c)
    else {
      this.lent--
      this.free.push(c)
    }
  }

  figures(): { total: number; idle: number; waiting: number } {
    return { total: this.size, idle: this.size - this.lent, waiting: this.waiting.length }
  }

  async end(): Promise<void> {
    this.closed = true
    await Promise.all(this.all.map((c) => c.end()))
  }
}

/** Single statements outside a transaction, each on a connection lent to it. */
class PooledQueryable extends SendingQueryable {
  constructor(
    private readonly pool: ConnectionPool,
    private readonly timing: Timing,
  ) {
    super()
  }

  protected async send(sql: string, params?: readonly SqlValue[]): Promise<StatementResult> {
    const c = await this.pool.acquire()
    try {
      return await this.timing.run('pool', c.driver, sql, params)
    } finally {
      this.pool.release(c)
    }
  }

  async exec(script: string): Promise<void> {
    const c = await this.pool.acquire()
    try {
      // No parameters: postgres.js sends it as one simple query, which may hold several statements.
      await c.driver.unsafe(script)
    } finally {
      this.pool.release(c)
    }
  }
}

interface HeldBack {
  sql: string
  params: readonly SqlValue[] | undefined
}

/**
 * BEGIN when asked, the statements and COMMIT, sent in this order in one turn (each as it is issued: `execute`).
 * Every answer is awaited (allSettled), so nothing is still in flight when the connection is handed on; the first
 * failure in sending order is the commit's: the statement that failed the block, not the ones the aborted block
 * then refused.
 */
async function sendToCommit(
  driver: Driver,
  timing: Timing,
  statements: readonly HeldBack[],
  begin: boolean,
): Promise<void> {
  const answers: Promise<unknown>[] = begin ? [driver.unsafe('BEGIN').execute()] : []
  for (const h of statements) answers.push(timing.run('transaction', driver, h.sql, h.params))
  answers.push(driver.unsafe('COMMIT').execute())
  for (const outcome of await Promise.allSettled(answers)) {
    if (outcome.status === 'rejected') throw outcome.reason
  }
}

/**
 * A transaction's statements on the connection lent to it. BEGIN goes out with the first statement and the
 * held-back statements (`CommitTail`) with the COMMIT: postgres.js writes statements issued in one turn together
 * and answers them in order, each with its own Sync, so BEGIN opens a transaction block the next statement runs in,
 * and a held-back statement that fails aborts the block, whose COMMIT then rolls back (PostgreSQL answers it with
 * ROLLBACK, not an error: the held-back statement's own error is what the commit throws).
 *
 * Held-back statements return no rows. postgres.js re-sends a prepared statement once when the server refuses its
 * cached plan (a schema change under it); for a statement that returns no rows that happens only when a column it
 * writes changed type while the server ran, which a migration of this project never does to a table written here.
 */
class PgTransaction extends SendingQueryable implements CommitTail {
  /** Whether BEGIN has been sent: COMMIT and ROLLBACK follow only then. */
  begun = false
  private readonly held: HeldBack[] = []

  constructor(
    private readonly connection: Connection,
    private readonly timing: Timing,
  ) {
    super()
  }

  /**
   * Where the transaction's statements go. Once its connection closed, the transaction is over (the server rolled
   * it back): nothing more may be sent, or it would run on a fresh session, outside the transaction.
   */
  private get driver(): Driver {
    if (this.begun && this.connection.lost) {
      throw Object.assign(
        new Error('The store connection was lost during the transaction; it was rolled back'),
        {
          code: 'CONNECTION_CLOSED',
        },
      )
    }
    return this.connection.driver
  }

  atCommit(sql: string, params?: readonly SqlValue[]): void {
    this.held.push({ sql, params })
  }

  /** Commits what was sent and what was held back; a transaction that did nothing sends nothing. */
  async commit(): Promise<void> {
    if (this.held.length === 0) {
      if (this.begun) await this.driver.unsafe('COMMIT')
      return
    }
    const driver = this.driver
    const begin = !this.begun
    this.begun = true
    await sendToCommit(driver, this.timing, this.held, begin)
  }

  /** Rolls back what was begun; on a lost connection the server has rolled back already. */
  async rollback(): Promise<void> {
    if (!this.begun || this.connection.lost) return
    await this.connection.driver.unsafe('ROLLBACK').catch(() => {})
  }

  protected async send(sql: string, params?: readonly SqlValue[]): Promise<StatementResult> {
    if (this.begun) return this.timing.run('transaction', this.driver, sql, params)
    const driver = this.driver
    this.begun = true
    // postgres.js sends a query when it is first awaited unless `execute` sends it at once: BEGIN must go first.
    const begin = driver.unsafe('BEGIN').execute()
    const [, result] = await Promise.all([begin, this.timing.run('transaction', driver, sql, params)])
    return result
  }

  async exec(script: string): Promise<void> {
    if (!this.begun) {
      const driver = this.driver
      this.begun = true
      await driver.unsafe('BEGIN')
    }
    await this.driver.unsafe(script)
  }
}

/**
 * A deferred unit of work's transaction (Db.deferredUnitOfWork): every statement is held back, and the commit sends
 * the `atBegin` statements and then the `atCommit` ones as one statement (one-statement.ts: atomic with no BEGIN or
 * COMMIT to answer), on a connection that other deferred units share. Text that cannot be combined goes as BEGIN,
 * the statements and COMMIT, contiguous on the connection, so they still form one transaction block. Either way a
 * unit is sent whole, so a statement that waits for a lock waits only for units sent before it (on this connection
 * or another), never for one queued behind it: no wait can close a cycle through the pipeline.
 */
class DeferredTransaction implements Queryable, CommitTail {
  private readonly first: HeldBack[] = []
  readonly held: HeldBack[] = []

  constructor(
    private readonly connections: SharedConnections,
    private readonly timing: Timing,
  ) {}

  atBegin(sql: string, params?: readonly SqlValue[]): void {
    this.first.push({ sql, params })
  }

  atCommit(sql: string, params?: readonly SqlValue[]): void {
    this.held.push({ sql, params })
  }

  async commit(): Promise<void> {
    const statements = [...this.first, ...this.held]
    if (statements.length === 0) return
    const connection = this.connections.pick()
    const driver = connection.driver
    const one = statements.length === 1 ? statements[0] : asOneStatement(statements)
    const sent = one ? 1 : statements.length + 2
    connection.load += sent
    try {
      if (one) {
        await this.timing.run('transaction', driver, one.sql, one.params)
        return
      }
      await sendToCommit(driver, this.timing, statements, true)
    } finally {
      connection.load -= sent
    }
  }

  private refuse(): Promise<never> {
    return Promise.reject(
      new Error(
        'A deferred unit of work sends nothing before its commit: a statement needing an answer ran in it',
      ),
    )
  }
  query<T extends Row = Row>(): Promise<T[]> {
    return this.refuse()
  }
  one<T extends Row = Row>(): Promise<T | undefined> {
    return this.refuse()
  }
  run(): Promise<number> {
    return this.refuse()
  }
  exec(): Promise<void> {
    return this.refuse()
  }
}

/** At most this many connections per replica for transactions and pooled statements. */
const POOL_MAX = 10
/**
 * Pipelined connections of the hot path. With synchronous commit every write waits for its WAL flush before the
 * next statement on its connection runs; four connections let those waits overlap (measured with the earlier
 * driver at 50 concurrent clients: one connection reached a third of the pool's throughput, four came close).
 */
const PIPELINE_MAX = 4
/**
 * Connections the deferred units' commits share: one. Every deferred unit appends an event, and the event log's
 * ordering lock is held from that append to the end of its COMMIT (WAL flush included), so deferred units commit
 * one at a time however many connections carry them. On one connection they wait in its pipeline, in order, instead
 * of in several backends asleep on the lock, each woken in turn (a context switch per unit on the database's
 * cores), and the server sends and reads them in shared socket writes and reads. Measured against four connections
 * (`npm run bench:observability -- --route post-keyed --postgres --b-root <checkout>`, 10 and 16 rounds): 14-16 %
 * less server CPU per keyed POST; README, Performance.
 */
const DEFERRED_MAX = 1

export class PostgresDb
  extends ForwardingQueryable
  implements Db, Pipelined, TransactionTiming, StatementTiming, PoolFigures
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
    /** Where the change feed opens its own LISTEN connection (src/store/notifications.ts). */
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
      const after = unit.handOver()
      throw new DeferredCommitRefused(err, () => {
        const next = currentUnit<Queryable>(this)
        const tail = next && commitTailOf(next.tx)
        if (!next || !tail)
          throw new Error('A refused unit resumes only inside another unit of the same store')
        for (const h of tx.held) tail.atCommit(h.sql, h.params)
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
    try {
      const result = await fn(tx)
      await tx.commit()
      this.observeTransaction?.((performance.now() - started) / 1000)
      return result
    } catch (err) {
      await tx.rollback()
      throw err
    } finally {
      this.pool.release(connection)
    }
  }

  /** The pool's capacity, the part of it not lent, and the callers waiting for a connection (metrics). */
  poolFigures(): { total: number; idle: number; waiting: number } {
    return this.pool.figures()
  }

  async close(): Promise<void> {
    await Promise.all([this.pipeline.close(), this.deferred.close(), this.pool.end()])
  }
}
