import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { type Db, normaliseParams, type Queryable, type Row, type SqlValue } from './db.js'

/** `$1 … $n` placeholders become `?` with the parameters reordered (a placeholder may repeat). */
export function translatePlaceholders(
  sql: string,
  params: readonly SqlValue[] = [],
): { sql: string; params: ReturnType<typeof normaliseParams> } {
  const values = normaliseParams(params)
  const ordered: ReturnType<typeof normaliseParams> = []
  const text = sql.replace(/\$(\d+)/g, (_m, n: string) => {
    ordered.push(values[Number(n) - 1] ?? null)
    return '?'
  })
  return { sql: text, params: ordered }
}

export function translateDdl(script: string): string {
  return script
    .replace(/\bBIGSERIAL PRIMARY KEY\b/gi, 'INTEGER PRIMARY KEY AUTOINCREMENT')
    .replace(/\bBYTEA\b/gi, 'BLOB')
}

/** A FIFO lock: SQLite work is serialised so an open transaction never sees foreign statements. */
class Mutex {
  private tail: Promise<void> = Promise.resolve()
  async lock<T>(fn: () => Promise<T>): Promise<T> {
    let release!: () => void
    const next = new Promise<void>((r) => {
      release = r
    })
    const previous = this.tail
    this.tail = previous.then(() => next)
    await previous
    try {
      return await fn()
    } finally {
      release()
    }
  }
}

class SqliteQueryable implements Queryable {
  constructor(protected readonly raw: Database.Database) {}
  async query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    const t = translatePlaceholders(sql, params)
    const stmt = this.raw.prepare(t.sql)
    if (stmt.reader) return stmt.all(...t.params) as T[]
    stmt.run(...t.params)
    return []
  }
  async one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    const rows = await this.query<T>(sql, params)
    return rows[0]
  }
  async run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    const t = translatePlaceholders(sql, params)
    const stmt = this.raw.prepare(t.sql)
    if (stmt.reader) return stmt.all(...t.params).length
    return stmt.run(...t.params).changes
  }
  async exec(script: string): Promise<void> {
    this.raw.exec(translateDdl(script))
  }
}

export class SqliteDb implements Db {
  readonly dialect = 'sqlite' as const
  private readonly mutex = new Mutex()
  private readonly direct: SqliteQueryable

  private constructor(private readonly raw: Database.Database) {
    this.direct = new SqliteQueryable(raw)
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
    return this.mutex.lock(() => this.direct.query<T>(sql, params))
  }
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.mutex.lock(() => this.direct.one<T>(sql, params))
  }
  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.mutex.lock(() => this.direct.run(sql, params))
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
