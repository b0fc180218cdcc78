/**
 * How statements reach PostgreSQL over the connections of ./connections.ts: pipelined single statements, pooled
 * single statements, transactions whose BEGIN and held-back statements share writes with the first statement and
 * the COMMIT, and deferred units sent whole at their commit.
 */
import { performance } from 'node:perf_hooks'
import {
  type CommitTail,
  type InOneStatement,
  normaliseParams,
  type Queryable,
  type RefusalAtCommit,
  RefusedAtCommit,
  type Row,
  SendingQueryable,
  type SqlValue,
  type StatementPath,
  type StatementResult,
} from '../db.js'
import { asOneStatement } from '../one-statement.js'
import { asOrderedStatement, type OrderedStatement } from '../ordered-statement.js'
import { type Connection, type ConnectionPool, type Driver, SharedConnections } from './connections.js'

/** A bound value as postgres.js takes it: a bigint as its decimal text (the server casts it to the column's type). */
function toDriverParams(params: readonly SqlValue[] | undefined) {
  return normaliseParams(params).map((p) => (typeof p === 'bigint' ? p.toString() : p))
}

/** Statement latency, told to the observer when one is set (metrics). */
export class Timing {
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
    // Prepared with or without parameters: postgres.js sends a statement without any in the simple protocol, which
    // PostgreSQL parses, analyses and plans again every time (the outbox's reads after each event).
    const rows = await target.unsafe(text, toDriverParams(params), { prepare: true, simple: false }).execute()
    observe?.(path, (performance.now() - started) / 1000)
    return { rows, rowCount: rows.count }
  }
}

/** What was sent on `connection`, telling it of a failure that ends its session (Connection.failed). */
async function watched<T>(connection: Connection, driver: Driver, sent: Promise<T>): Promise<T> {
  try {
    return await sent
  } catch (err) {
    connection.failed(driver, err)
    throw err
  }
}

/** The error of a transaction whose session ended under it: PostgreSQL rolled it back, unless it was committing. */
function sessionLost(cause: unknown, committing: boolean): Error {
  const message = committing
    ? 'The store connection was lost while the transaction committed; whether it committed is unknown'
    : 'The store connection was lost during the transaction; it was rolled back'
  return Object.assign(new Error(message, { cause }), { code: 'CONNECTION_CLOSED' })
}

/** Lock-free single statements, pipelined on a few connections (see the module's comment). */
export class PipelinedQueryable extends SendingQueryable {
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
      const driver = connection.openDriver ?? (await connection.open())
      return await watched(connection, driver, this.timing.run('pipeline', driver, sql, params))
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

/** Single statements outside a transaction, each on a connection lent to it. */
export class PooledQueryable extends SendingQueryable {
  constructor(
    private readonly pool: ConnectionPool,
    private readonly timing: Timing,
  ) {
    super()
  }

  protected async send(sql: string, params?: readonly SqlValue[]): Promise<StatementResult> {
    const c = await this.pool.acquire()
    try {
      const driver = c.openDriver ?? (await c.open())
      return await watched(c, driver, this.timing.run('pool', driver, sql, params))
    } finally {
      this.pool.release(c)
    }
  }

  async exec(script: string): Promise<void> {
    const c = await this.pool.acquire()
    try {
      // No parameters: postgres.js sends it as one simple query, which may hold several statements.
      const driver = c.openDriver ?? (await c.open())
      await watched(c, driver, driver.unsafe(script).execute())
    } finally {
      this.pool.release(c)
    }
  }
}

/**
 * COUNTS_FIRST: a transaction's quota counts (refusable statements) go out before its other held-back writes, so
 * every transaction takes its workspace's usage rows before the event log's append lock (the last of its writes):
 * in one order everywhere, two commits never wait on each other in a cycle.
 */
interface HeldBack {
  sql: string
  params: readonly SqlValue[] | undefined
  /** A count that may refuse the write (CommitTail.refusableAtCommit). */
  refusal?: RefusalAtCommit
  answered?: ((rows: readonly Row[]) => void) | undefined
  /** Its place in a deferred unit sent as one statement (src/store/ordered-statement.ts). */
  order?: InOneStatement | undefined
}

/** The writes a transaction holds back to its COMMIT: its counts, sent before the others (COUNTS_FIRST). */
export class HeldBackWrites {
  /** Quota counts and give-backs (CommitTail.refusableAtCommit, countAtCommit). */
  readonly counts: HeldBack[] = []
  readonly others: HeldBack[] = []

  atCommit(sql: string, params?: readonly SqlValue[], order?: InOneStatement): void {
    this.others.push({ sql, params, order })
  }

  refusableAtCommit(
    sql: string,
    params: readonly SqlValue[],
    refusal: RefusalAtCommit,
    answered?: (rows: readonly Row[]) => void,
    order?: InOneStatement,
  ): void {
    this.counts.push({ sql, params, refusal, answered, order })
  }

  countAtCommit(sql: string, params: readonly SqlValue[], order?: InOneStatement): void {
    this.counts.push({ sql, params, order })
  }

  get empty(): boolean {
    return this.counts.length === 0 && this.others.length === 0
  }

  /** In sending order: the counts, then the others. */
  inOrder(): HeldBack[] {
    return [...this.counts, ...this.others]
  }

  /** Held back by another transaction's tail instead, in the same order (a refused deferred unit's writes). */
  handTo(tail: CommitTail): void {
    for (const h of this.counts) {
      if (!tail.refusableAtCommit || !tail.countAtCommit)
        throw new Error('A quota count is handed only to a tail that holds counts')
      if (h.refusal) tail.refusableAtCommit(h.sql, h.params ?? [], h.refusal, h.answered, h.order)
      else tail.countAtCommit(h.sql, h.params ?? [], h.order)
    }
    for (const h of this.others) tail.atCommit(h.sql, h.params, h.order)
  }
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
  const outcomes = await Promise.allSettled(answers)
  const first = begin ? 1 : 0
  for (const [i, outcome] of outcomes.entries()) {
    if (outcome.status === 'fulfilled') continue
    const refusal = statements[i - first]?.refusal
    throw refusal?.matches(outcome.reason) ? new RefusedAtCommit(refusal, outcome.reason) : outcome.reason
  }
  for (const [i, h] of statements.entries()) {
    const outcome = outcomes[i + first]
    if (h.answered && outcome?.status === 'fulfilled') h.answered((outcome.value as StatementResult).rows)
  }
}

/**
 * A transaction's statements on the connection lent to it. BEGIN goes out with the first statement and the
 * held-back statements (`CommitTail`) with the COMMIT: postgres.js writes statements issued in one turn together
 * and answers them in order, each with its own Sync, so BEGIN opens a transaction block the next statement runs in,
 * and a held-back statement that fails aborts the block, whose COMMIT then rolls back (PostgreSQL answers it with
 * ROLLBACK, not an error: the held-back statement's own error is what the commit throws).
 *
 * Held-back statements return no rows to the caller (a refusable one hands them to its `answered` once committed). postgres.js re-sends a prepared statement once when the server refuses its
 * cached plan (a schema change under it); for a statement that returns no rows that happens only when a column it
 * writes changed type while the server ran, which a migration of this project never does to a table written here.
 */
export class PgTransaction extends SendingQueryable implements CommitTail {
  /** Whether BEGIN has been sent: COMMIT and ROLLBACK follow only then. */
  begun = false
  private readonly writes = new HeldBackWrites()

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
    if (this.connection.lost) throw sessionLost(undefined, false)
    return this.connection.driver
  }

  /** What was sent on the transaction's connection; a failure that ended its session ends the transaction. */
  private async sent<T>(driver: Driver, answer: Promise<T>, committing = false): Promise<T> {
    try {
      return await watched(this.connection, driver, answer)
    } catch (err) {
      throw this.connection.lost ? sessionLost(err, committing) : err
    }
  }

  atCommit(sql: string, params?: readonly SqlValue[], order?: InOneStatement): void {
    this.writes.atCommit(sql, params, order)
  }

  refusableAtCommit(
    sql: string,
    params: readonly SqlValue[],
    refusal: RefusalAtCommit,
    answered?: (rows: readonly Row[]) => void,
    order?: InOneStatement,
  ): void {
    this.writes.refusableAtCommit(sql, params, refusal, answered, order)
  }

  countAtCommit(sql: string, params: readonly SqlValue[], order?: InOneStatement): void {
    this.writes.countAtCommit(sql, params, order)
  }

  /** Commits what was sent and what was held back; a transaction that did nothing sends nothing. */
  async commit(): Promise<void> {
    if (this.writes.empty) {
      if (!this.begun) return
      const driver = this.driver
      await this.sent(driver, driver.unsafe('COMMIT').execute(), true)
      return
    }
    const driver = this.driver
    const begin = !this.begun
    this.begun = true
    await this.sent(driver, sendToCommit(driver, this.timing, this.writes.inOrder(), begin), true)
  }

  /** Rolls back what was begun; on a lost connection the server has rolled back already. */
  async rollback(): Promise<void> {
    if (!this.begun || this.connection.lost) return
    await this.connection.driver.unsafe('ROLLBACK').catch(() => {})
  }

  protected async send(sql: string, params?: readonly SqlValue[]): Promise<StatementResult> {
    const driver = this.driver
    if (this.begun) return this.sent(driver, this.timing.run('transaction', driver, sql, params))
    this.begun = true
    // postgres.js sends a query when it is first awaited unless `execute` sends it at once: BEGIN must go first.
    const begin = driver.unsafe('BEGIN').execute()
    const both = Promise.all([begin, this.timing.run('transaction', driver, sql, params)])
    const [, result] = await this.sent(driver, both)
    return result
  }

  async exec(script: string): Promise<void> {
    if (!this.begun) {
      const driver = this.driver
      this.begun = true
      await this.sent(driver, driver.unsafe('BEGIN').execute())
    }
    const driver = this.driver
    await this.sent(driver, driver.unsafe(script).execute())
  }
}

/**
 * A deferred unit of work's transaction (Db.deferredUnitOfWork): every statement is held back, and the commit sends
 * the `atBegin` statements and then the `atCommit` ones as one statement (one-statement.ts: atomic with no BEGIN or
 * COMMIT to answer; with counts, in COUNTS_FIRST's order: ordered-statement.ts), on a connection that other deferred
 * units share. Text that cannot be combined goes as BEGIN,
 * the statements and COMMIT, contiguous on the connection, so they still form one transaction block. Either way a
 * unit is sent whole, so a statement that waits for a lock waits only for units sent before it (on this connection
 * or another), never for one queued behind it: no wait can close a cycle through the pipeline.
 */
export class DeferredTransaction implements Queryable, CommitTail {
  private readonly first: HeldBack[] = []
  readonly writes = new HeldBackWrites()

  constructor(
    private readonly connections: SharedConnections,
    private readonly timing: Timing,
  ) {}

  atBegin(sql: string, params?: readonly SqlValue[], order?: InOneStatement): void {
    this.first.push({ sql, params, order })
  }

  atCommit(sql: string, params?: readonly SqlValue[], order?: InOneStatement): void {
    this.writes.atCommit(sql, params, order)
  }

  /** Held back like `atCommit`, sent before the other writes (COUNTS_FIRST). */
  refusableAtCommit(
    sql: string,
    params: readonly SqlValue[],
    refusal: RefusalAtCommit,
    answered?: (rows: readonly Row[]) => void,
    order?: InOneStatement,
  ): void {
    this.writes.refusableAtCommit(sql, params, refusal, answered, order)
  }

  countAtCommit(sql: string, params: readonly SqlValue[], order?: InOneStatement): void {
    this.writes.countAtCommit(sql, params, order)
  }

  /**
   * Sends the unit whole: one statement when its writes combine (with counts, in COUNTS_FIRST's order:
   * ordered-statement.ts), else BEGIN, its statements and COMMIT. A combined unit that a count refused is sent again
   * as its statements, whose failures tell which count it was (a refusal is rare: its cost does not matter).
   */
  async commit(): Promise<void> {
    const counts = this.writes.counts
    const statements = [...this.first, ...this.writes.inOrder()]
    if (statements.length === 0) return
    const one =
      statements.length === 1 ? statements[0] : counts.length > 0 ? null : asOneStatement(statements)
    const ordered =
      counts.length > 0 && statements.length > 1
        ? asOrderedStatement({ first: this.first, counts, others: this.writes.others })
        : undefined
    if (ordered) {
      try {
        await this.send(1, (driver) => this.sendOrdered(driver, ordered))
        return
      } catch (err) {
        if (!counts.some((h) => h.refusal?.matches(err))) throw err
      }
    }
    await this.send(one ? 1 : statements.length + 2, (driver) =>
      one
        ? this.timing.run('transaction', driver, one.sql, one.params)
        : sendToCommit(driver, this.timing, statements, true),
    )
  }

  /** The ordered statement, each count's rows then handed to its `answered`. */
  private async sendOrdered(driver: Driver, ordered: OrderedStatement): Promise<void> {
    const { rows } = await this.timing.run('transaction', driver, ordered.sql, ordered.params)
    const row = rows[0]
    for (const [i, h] of this.writes.counts.entries()) {
      const answer = row?.[ordered.countColumns[i] as string]
      h.answered?.(Array.isArray(answer) ? (answer as Row[]) : [])
    }
  }

  /** `statements` messages sent on one of the shared connections, counted in its load while in flight. */
  private async send(statements: number, sent: (driver: Driver) => Promise<unknown>): Promise<void> {
    const connection = this.connections.pick()
    connection.load += statements
    try {
      const driver = connection.openDriver ?? (await connection.open())
      await watched(connection, driver, sent(driver))
    } finally {
      connection.load -= statements
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
