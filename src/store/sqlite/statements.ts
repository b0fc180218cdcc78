/**
 * How statements reach SQLite: SQL written in PostgreSQL style rewritten once for better-sqlite3 (placeholders,
 * DDL), prepared statements cached per text, run synchronously and wrapped in the async `Queryable` face.
 */
import type Database from 'better-sqlite3'
import { normaliseParams, type Queryable, type Row, type SqlValue, type UsageLedger } from '../db.js'
import type { SqliteUsageLedger } from './usage-ledger.js'

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

type RowBuilder = (values: readonly unknown[]) => Row

/**
 * Rows of a statement are read as arrays and made into objects by an object literal compiled once per column
 * list. better-sqlite3's own row objects look every column name up in V8's string table on every row, which a
 * profile of `GET /v1/runs/{id}` (31 columns) showed among the read's largest costs.
 */
function compileRowBuilder(columns: readonly string[]): RowBuilder {
  const fields = columns.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(', ')
  return new Function('v', `return { ${fields} }`) as RowBuilder
}

export interface CachedStatement {
  stmt: Database.Statement
  order: number[]
  /** Column names for a statement that returns rows (empty otherwise), and the builder made from them. */
  columns: string[]
  build: RowBuilder
  /** Whether the statement names the quota usage rows: pending counts are written before it runs (usage-ledger.ts). */
  usage: boolean
}

const NAMES_USAGE = /\bquota_usage\b/i

function columnsOf(stmt: Database.Statement): string[] {
  return stmt.reader ? stmt.columns().map((c) => c.name) : []
}

/** The row as an object; a schema change (SELECT * after a migration) re-reads the statement's columns. */
function toRow(entry: CachedStatement, values: readonly unknown[]): Row {
  if (values.length !== entry.columns.length) {
    entry.columns = columnsOf(entry.stmt)
    entry.build = compileRowBuilder(entry.columns)
  }
  return entry.build(values)
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
    const stmt = this.raw.prepare(t.sql)
    if (stmt.reader) stmt.raw(true)
    const columns = columnsOf(stmt)
    const entry = {
      stmt,
      order: t.order,
      columns,
      build: compileRowBuilder(columns),
      usage: NAMES_USAGE.test(sql),
    }
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
export class SqliteStatements {
  constructor(
    readonly statements: StatementCache,
    /** Run before a statement that names the quota usage rows (the usage ledger's flush). */
    private readonly beforeUsage?: () => void,
  ) {}
  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): T[] {
    return this.queryWith<T>(this.statements.get(sql), params)
  }
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): T | undefined {
    return this.oneWith<T>(this.statements.get(sql), params)
  }
  run(sql: string, params?: readonly SqlValue[]): number {
    return this.runWith(this.statements.get(sql), params)
  }
  /** Pending quota counts written now (a script may name their rows). */
  flushUsage(): void {
    this.beforeUsage?.()
  }
  queryWith<T extends Row = Row>(entry: CachedStatement, params?: readonly SqlValue[]): T[] {
    if (entry.usage) this.beforeUsage?.()
    const { stmt, order } = entry
    const values = bind(order, params)
    if (!stmt.reader) {
      stmt.run(...values)
      return []
    }
    const rows = stmt.all(...values) as unknown[][]
    const out = new Array<T>(rows.length)
    for (let i = 0; i < rows.length; i++) out[i] = toRow(entry, rows[i] as unknown[]) as T
    return out
  }
  oneWith<T extends Row = Row>(entry: CachedStatement, params?: readonly SqlValue[]): T | undefined {
    if (entry.usage) this.beforeUsage?.()
    const { stmt, order } = entry
    const values = bind(order, params)
    if (!stmt.reader) {
      stmt.run(...values)
      return undefined
    }
    const row = stmt.get(...values) as unknown[] | undefined
    return row === undefined ? undefined : (toRow(entry, row) as T)
  }
  runWith(entry: CachedStatement, params?: readonly SqlValue[]): number {
    if (entry.usage) this.beforeUsage?.()
    const { stmt, order } = entry
    const values = bind(order, params)
    if (stmt.reader) return stmt.all(...values).length
    return stmt.run(...values).changes
  }
}

export class SqliteQueryable implements Queryable {
  constructor(
    private readonly sync: SqliteStatements,
    private readonly ledger?: SqliteUsageLedger,
  ) {}

  /** The open batch's quota counts (store/db.ts usageLedgerOf); none outside a transaction. */
  get usageLedger(): UsageLedger | undefined {
    return this.ledger?.active ? this.ledger : undefined
  }

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
    this.sync.flushUsage()
    this.sync.statements.raw.exec(translateDdl(script))
  }
}
