import { createHash } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import pg from 'pg'
import {
  type CommitTail,
  type Db,
  normaliseParams,
  type Pipelined,
  type Queryable,
  type Row,
  SendingQueryable,
  type SqlValue,
} from './db.js'
import { Pipeline, toWire } from './pipeline.js'
import { afterCommitOf, currentUnit, JoiningQueryable, runInUnit, Unit } from './unit-of-work.js'

// int8 (COUNT, BIGINT, BIGSERIAL) arrives as a string by default; our values stay far below 2^53.
const parseInt8 = (v: string) => Number(v)
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20 ? parseInt8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
}

/**
 * Named prepared statements (`{name, text, values}`): pg parses each text once per pooled connection and the
 * server keeps the plan, so the hot path sends Bind/Execute only. The name is derived from the text, so one
 * name never stands for two texts. A schema change that alters a `SELECT *` result shape makes PostgreSQL
 * refuse the old plan ("cached plan must not change result type", 0A000); that text then runs unnamed for the
 * rest of the process, and outside a transaction the failed query is retried once.
 */
export class StatementNames {
  private readonly names = new Map<string, string>()
  private readonly unnamed = new Set<string>()

  nameFor(text: string): string | undefined {
    if (this.unnamed.has(text)) return undefined
    let name = this.names.get(text)
    if (!name) {
      name = `s_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`
      this.names.set(text, name)
    }
    return name
  }

  /**
   * Runs one autocommit statement under its name. A statement refused for a stale plan did nothing, so it runs
   * once more, unnamed. (Inside a transaction it cannot be retried: see PgTransaction.)
   */
  async autocommit<T>(text: string, run: (name: string | undefined) => Promise<T>): Promise<T> {
    const name = this.nameFor(text)
    try {
      return await run(name)
    } catch (err) {
      if (!name || !this.retire(text, err)) throw err
      return run(undefined)
    }
  }

  /** True when the error means the named plan is stale; the text goes unnamed from now on. */
  retire(text: string, err: unknown): boolean {
    const e = err as { code?: string; message?: string }
    if (e?.code !== '0A000' || !e.message?.includes('cached plan')) return false
    this.unnamed.add(text)
    return true
  }
}

/** Single statements outside a transaction, each on whichever pooled client is free. */
class PgQueryable extends SendingQueryable {
  constructor(
    private readonly client: pg.Pool,
    private readonly names: StatementNames,
  ) {
    super()
  }

  protected send(sql: string, params?: readonly SqlValue[]): Promise<pg.QueryResult> {
    const values = normaliseParams(params)
    return this.names.autocommit(sql, (name) =>
      this.client.query(name ? { name, text: sql, values, types } : { text: sql, values, types }),
    )
  }

  async exec(script: string): Promise<void> {
    await this.client.query(script)
  }
}

/** The part of pg's wire connection a BEGIN sent ahead of a statement needs (pg/lib/connection.js). */
interface BeginWire {
  parse(query: { name: string; text: string; types: number[] }): void
  bind(config: { portal: string; statement: string; values: unknown[] }): void
  execute(config: { portal: string; rows: number }): void
}

/** Statement names pg has parsed on this client's connection (pg keeps them on an untyped field). */
function parsedOn(client: pg.PoolClient): Record<string, string | undefined> {
  return (client as unknown as { connection: { parsedStatements: Record<string, string | undefined> } })
    .connection.parsedStatements
}

/**
 * Sends BEGIN in the same write and Sync group as the statement, ahead of it: BEGIN turns the group into a
 * transaction block that stays open after the Sync. The statement must already be parsed on this connection
 * (or be unnamed): pg files any ParseComplete under the statement's name, and BEGIN's own Parse would
 * otherwise register a name whose Parse might then fail.
 */
function beginWith(client: pg.PoolClient, name: string | undefined, text: string, values: unknown[]) {
  return new Promise<pg.QueryResult>((resolve, reject) => {
    const config: pg.QueryConfig = name ? { name, text, values } : { text, values }
    ;(config as { types?: unknown }).types = types
    const query = new pg.Query(config, (err, res) => {
      if (err) reject(err)
      // Two results, BEGIN's and the statement's.
      else resolve((Array.isArray(res) ? res[res.length - 1] : res) as unknown as pg.QueryResult)
    })
    const hook = query as unknown as { prepare(con: BeginWire): void }
    const prepare = hook.prepare.bind(query)
    hook.prepare = (con) => {
      con.parse({ name: '', text: 'BEGIN', types: [] })
      con.bind({ portal: '', statement: '', values: [] })
      con.execute({ portal: '', rows: 0 })
      prepare(con)
    }
    client.query(query)
  })
}

/** The wire messages that run one statement in the extended protocol, with no Describe: its rows are not read. */
function sendStatement(
  con: BeginWire,
  name: string | undefined,
  text: string,
  values: readonly unknown[],
): void {
  if (name === undefined) con.parse({ name: '', text, types: [] })
  con.bind({ portal: '', statement: name ?? '', values: values.map(toWire) })
  con.execute({ portal: '', rows: 0 })
}

interface HeldBack {
  sql: string
  values: unknown[]
}

/**
 * Sends a transaction's held-back statements and its COMMIT in one write and one Sync group (with BEGIN ahead of
 * them when nothing was sent yet). The last held-back statement is pg's query, so pg parses and names it as usual;
 * the others bind names this connection has parsed, or run unnamed. As with `beginWith`, the last statement keeps
 * its name only when no Parse goes out ahead of it or it is parsed already: pg files any ParseComplete under the
 * query's name. A failure anywhere skips the rest of the group, COMMIT included, and rejects.
 */
function commitWith(
  client: pg.PoolClient,
  names: StatementNames,
  begin: boolean,
  held: readonly HeldBack[],
): Promise<void> {
  const last = held[held.length - 1] as HeldBack
  const parsed = parsedOn(client)
  let parseAhead = begin
  const ahead = held.slice(0, -1).map(({ sql, values }) => {
    const name = names.nameFor(sql)
    const bound = name !== undefined && parsed[name] === sql ? name : undefined
    if (bound === undefined) parseAhead = true
    return { name: bound, sql, values }
  })
  let name = names.nameFor(last.sql)
  if (name !== undefined && parseAhead && parsed[name] !== last.sql) name = undefined
  return new Promise<void>((resolve, reject) => {
    const config: pg.QueryConfig = name
      ? { name, text: last.sql, values: last.values }
      : { text: last.sql, values: last.values }
    ;(config as { types?: unknown }).types = types
    const query = new pg.Query(config, (err) => {
      if (!err) return resolve()
      for (const h of held) names.retire(h.sql, err)
      reject(err)
    })
    const hook = query as unknown as {
      prepare(con: BeginWire): void
      _getRows(con: BeginWire & { sync(): void }, rows: number): void
    }
    if (typeof hook._getRows !== 'function') {
      // pg's Query is not public API (package.json pins pg); say so plainly rather than fail with a TypeError.
      reject(
        new Error(
          'This version of pg has no Query._getRows to send a COMMIT with; install the pg version package.json names',
        ),
      )
      return
    }
    const prepare = hook.prepare.bind(query)
    hook.prepare = (con) => {
      if (begin) sendStatement(con, undefined, 'BEGIN', [])
      for (const a of ahead) sendStatement(con, a.name, a.sql, a.values)
      prepare(con)
    }
    // pg ends its query with Execute and Sync; COMMIT goes in between.
    hook._getRows = (con, rows) => {
      con.execute({ portal: '', rows })
      sendStatement(con, undefined, 'COMMIT', [])
      con.sync()
    }
    client.query(query)
  })
}

/**
 * A transaction's statements on its pooled client; BEGIN goes out with the first one and the held-back statements
 * (`CommitTail`) with the COMMIT (one round trip less each).
 */
class PgTransaction extends SendingQueryable implements CommitTail {
  /** Whether BEGIN has been sent: COMMIT and ROLLBACK follow only then. */
  begun = false
  private readonly held: HeldBack[] = []

  constructor(
    private readonly client: pg.PoolClient,
    private readonly names: StatementNames,
  ) {
    super()
  }

  atCommit(sql: string, params?: readonly SqlValue[]): void {
    this.held.push({ sql, values: normaliseParams(params) })
  }

  /** Commits what was sent and what was held back; a transaction that did nothing sends nothing. */
  async commit(): Promise<void> {
    if (this.held.length > 0) {
      const begin = !this.begun
      this.begun = true
      await commitWith(this.client, this.names, begin, this.held)
    } else if (this.begun) {
      await this.client.query('COMMIT')
    }
  }

  protected async send(sql: string, params?: readonly SqlValue[]): Promise<pg.QueryResult> {
    const values = normaliseParams(params)
    const name = this.names.nameFor(sql)
    try {
      if (!this.begun) {
        this.begun = true
        if (name === undefined || parsedOn(this.client)[name] === sql)
          return await beginWith(this.client, name, sql, values)
        await this.client.query('BEGIN')
      }
      return await this.client.query(name ? { name, text: sql, values, types } : { text: sql, values, types })
    } catch (err) {
      // Inside a transaction the statement cannot be retried, but later transactions run it unnamed.
      this.names.retire(sql, err)
      throw err
    }
  }

  async exec(script: string): Promise<void> {
    if (!this.begun) {
      this.begun = true
      await this.client.query('BEGIN')
    }
    await this.client.query(script)
  }
}

export class PostgresDb implements Db, Pipelined {
  readonly dialect = 'postgres' as const
  private readonly direct: PgQueryable
  private readonly names = new StatementNames()
  private observeTransaction: ((seconds: number) => void) | undefined
  /** Independent single statements on the hot path, pipelined on up to four connections (src/store/pipeline.ts). */
  readonly pipeline: Pipeline
  /** The hot path as repositories use it: the pipeline, or the open unit of work's transaction (db.ts hotPath). */
  readonly hot: Queryable

  private constructor(
    private readonly pool: pg.Pool,
    /** Where the change feed opens its own LISTEN connection (src/store/notifications.ts). */
    readonly url: string,
  ) {
    this.direct = new PgQueryable(pool, this.names)
    this.pipeline = new Pipeline({
      url,
      autocommit: (text, run) => this.names.autocommit(text, run),
      parserFor: (oid) => types.getTypeParser(oid, 'text') as (text: string) => unknown,
      // Measured with synchronous commit and fsync on, 50 concurrent clients: one connection serialises every
      // commit's flush (a third of the pool's throughput across workspaces); four come close to the pool's.
      connections: 4,
    })
    this.hot = new JoiningQueryable(this, this.pipeline)
  }

  static async connect(url: string): Promise<PostgresDb> {
    const pool = new pg.Pool({ connectionString: url, max: 10 })
    // An idle client that errors (server restart) must not crash the process; the next query reconnects.
    pool.on('error', () => {})
    await pool.query('SELECT 1')
    return new PostgresDb(pool, url)
  }

  /** Outside a unit of work, any pooled client; inside one, the unit's transaction. */
  private target(): Queryable {
    return currentUnit<PgTransaction>(this)?.tx ?? this.direct
  }

  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.target().query<T>(sql, params)
  }
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.target().one<T>(sql, params)
  }
  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.target().run(sql, params)
  }
  timeTransactions(observe: (seconds: number) => void): void {
    this.observeTransaction = observe
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const unit = currentUnit<PgTransaction>(this)
    if (unit) return fn(unit.tx)
    return this.transact(fn)
  }

  /**
   * A unit of work: one transaction on one pooled client that every statement of fn's context joins; its
   * held-back statements (event appends, the idempotency answer) go out with the COMMIT.
   */
  async unitOfWork<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const open = currentUnit<PgTransaction>(this)
    if (open) return fn(open.tx)
    let unit: Unit<PgTransaction> | undefined
    const value = await this.transact((tx) => {
      unit = new Unit(this, tx)
      return runInUnit(unit, () => fn(tx))
    })
    unit?.committed()
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
    const client = await this.pool.connect()
    const tx = new PgTransaction(client, this.names)
    try {
      const result = await fn(tx)
      await tx.commit()
      this.observeTransaction?.((performance.now() - started) / 1000)
      return result
    } catch (err) {
      if (tx.begun) await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      client.release()
    }
  }
  exec(script: string): Promise<void> {
    return this.target().exec(script)
  }
  /** The pool's connections and the statements waiting for one (read by a metrics scrape). */
  poolFigures(): { total: number; idle: number; waiting: number } {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount }
  }

  async close(): Promise<void> {
    await this.pipeline.close()
    await this.pool.end()
  }
}
