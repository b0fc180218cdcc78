import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { type Db, normaliseParams, type Queryable, type Row, type SqlValue } from './db.js'

/** A statement rewritten from `$1 … $n` to `?`: which parameter each `?` binds, in order (one may repeat). */
export interface TranslatedSql {
  sql: string
  order: number[]
}

export function translateSql(sql: string): TranslatedSql {
  const order: number[] = []
  const text = sql.replace(/\$(\d+)/g, (_m, n: string) => {
    order.push(Number(n) - 1)
    return '?'
  })
  return { sql: text, order }
}

function bind(
  order: readonly number[],
  params: readonly SqlValue[] = [],
): ReturnType<typeof normaliseParams> {
  const values = normaliseParams(params)
  return order.map((i) => values[i] ?? null)
}

/** `$1 … $n` placeholders become `?` with the parameters reordered (a placeholder may repeat). */
export function translatePlaceholders(
  sql: string,
  params: readonly SqlValue[] = [],
): { sql: string; params: ReturnType<typeof normaliseParams> } {
  const t = translateSql(sql)
  return { sql: t.sql, params: bind(t.order, params) }
}

export function translateDdl(script: string): string {
  return script
    .replace(/\bBIGSERIAL PRIMARY KEY\b/gi, 'INTEGER PRIMARY KEY AUTOINCREMENT')
    .replace(/\bBYTEA\b/gi, 'BLOB')
}

/**
 * A FIFO lock: SQLite work is serialised so an open transaction never sees foreign statements. A single
 * statement is synchronous in better-sqlite3, so when nothing holds or awaits the lock it runs at once, with
 * no promise chain: most reads of a loaded server take that path.
 */
class Mutex {
  private tail: Promise<void> = Promise.resolve()
  /** Holders and waiters: zero means a synchronous statement cannot interleave with anything. */
  private pending = 0

  /** Runs `fn` now when the lock is free; otherwise queues it like `lock`. */
  run<T>(fn: () => T): Promise<T> {
    if (this.pending === 0) {
      try {
        return Promise.resolve(fn())
      } catch (err) {
        return Promise.reject(err)
      }
    }
    return this.lock(async () => fn())
  }

  async lock<T>(fn: () => Promise<T>): Promise<T> {
    let release!: () => void
    const next = new Promise<void>((r) => {
      release = r
    })
    const previous = this.tail
    this.tail = previous.then(() => next)
    this.pending++
    try {
      await previous
      return await fn()
    } finally {
      this.pending--
      release()
    }
  }
}

interface CachedStatement {
  stmt: Database.Statement
  order: number[]
}

/**
 * Prepared statements keyed by the SQL text as written, each with its placeholder order. Preparing is most of
 * the cost of a short query, and the repositories use a small fixed set of texts; the bound only guards against
 * a caller that builds SQL with variable shapes (IN lists), evicting the oldest entry first.
 */
export class StatementCache {
  private readonly entries = new Map<string, CachedStatement>()
  constructor(
    readonly raw: Database.Database,
    readonly capacity = 500,
  ) {}

  get(sql: string): CachedStatement {
    const hit = this.entries.get(sql)
    if (hit) return hit
    const t = translateSql(sql)
    const entry = { stmt: this.raw.prepare(t.sql), order: t.order }
    if (this.entries.size >= this.capacity) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
    this.entries.set(sql, entry)
    return entry
  }

  get size(): number {
    return this.entries.size
  }
}

/** Statements run synchronously (better-sqlite3); the async `Queryable` face wraps these. */
class SqliteStatements {
  constructor(readonly statements: StatementCache) {}
  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): T[] {
    const { stmt, order } = this.statements.get(sql)
    const values = bind(order, params)
    if (stmt.reader) return stmt.all(...values) as T[]
    stmt.run(...values)
    return []
  }
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): T | undefined {
    const { stmt, order } = this.statements.get(sql)
    const values = bind(order, params)
    if (stmt.reader) return stmt.get(...values) as T | undefined
    stmt.run(...values)
    return undefined
  }
  run(sql: string, params?: readonly SqlValue[]): number {
    const { stmt, order } = this.statements.get(sql)
    const values = bind(order, params)
    if (stmt.reader) return stmt.all(...values).length
    return stmt.run(...values).changes
  }
}

class SqliteQueryable implements Queryable {
  constructor(private readonly sync: SqliteStatements) {}
  async query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.sync.query<T>(sql, params)
  }
  async one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.sync.one<T>(sql, params)
  }
  async run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.sync.run(sql, params)
  }
  async exec(script: string): Promise<void> {
    this.sync.statements.raw.exec(translateDdl(script))
  }
}

export class SqliteDb implements Db {
  readonly dialect = 'sqlite' as const
  private readonly mutex = new Mutex()
  private readonly sync: SqliteStatements
  private readonly direct: SqliteQueryable

  private constructor(private readonly raw: Database.Database) {
    this.sync = new SqliteStatements(new StatementCache(raw))
    this.direct = new SqliteQueryable(this.sync)
  }

  /** Accepts `sqlite:path`, `file:path`, a bare path, or `:memory:`. */
  static open(url: string): SqliteDb {
    const path = url.replace(/^sqlite:(\/\/)?/, '').replace(/^file:(\/\/)?/, '') || ':memory:'
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    const raw = new Database(path)
    raw.pragma('journal_mode = WAL')
    raw.pragma('busy_timeout = 5000')
    raw.pragma('foreign_keys = ON')
    raw.pragma('synchronous = NORMAL')
    return new SqliteDb(raw)
  }

  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.mutex.run(() => this.sync.query<T>(sql, params))
  }
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.mutex.run(() => this.sync.one<T>(sql, params))
  }
  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.mutex.run(() => this.sync.run(sql, params))
  }
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.mutex.lock(async () => {
      this.raw.exec('BEGIN IMMEDIATE')
      try {
        const result = await fn(this.direct)
        this.raw.exec('COMMIT')
        return result
      } catch (err) {
        if (this.raw.inTransaction) this.raw.exec('ROLLBACK')
        throw err
      }
    })
  }
  exec(script: string): Promise<void> {
    return this.mutex.lock(() => this.direct.exec(script))
  }
  async close(): Promise<void> {
    await this.mutex.lock(async () => {
      this.raw.close()
    })
  }
}
