import pg from 'pg'
import { type Db, normaliseParams, type Queryable, type Row, type SqlValue } from './db.js'

// int8 (COUNT, BIGINT, BIGSERIAL) arrives as a string by default; our values stay far below 2^53.
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
}

class PgQueryable implements Queryable {
  constructor(private readonly client: pg.Pool | pg.PoolClient) {}
  async query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    const result = await this.client.query({ text: sql, values: normaliseParams(params), types })
    return result.rows as T[]
  }
  async one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    const rows = await this.query<T>(sql, params)
    return rows[0]
  }
  async run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    const result = await this.client.query({ text: sql, values: normaliseParams(params), types })
    return result.rowCount ?? 0
  }
}

export class PostgresDb implements Db {
  readonly dialect = 'postgres' as const
  private readonly direct: PgQueryable

  private constructor(
    private readonly pool: pg.Pool,
    /** Where the change feed opens its own LISTEN connection (src/store/notifications.ts). */
    readonly url: string,
  ) {
    this.direct = new PgQueryable(pool)
  }

  static async connect(url: string): Promise<PostgresDb> {
    const pool = new pg.Pool({ connectionString: url, max: 10 })
    // An idle client that errors (server restart) must not crash the process; the next query reconnects.
    pool.on('error', () => {})
    await pool.query('SELECT 1')
    return new PostgresDb(pool, url)
  }

  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.direct.query<T>(sql, params)
  }
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.direct.one<T>(sql, params)
  }
  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.direct.run(sql, params)
  }
  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect()
    try {
      await client.query('BEGIN')
      const result = await fn(new PgQueryable(client))
      await client.query('COMMIT')
      return result
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      client.release()
    }
  }
  async exec(script: string): Promise<void> {
    await this.pool.query(script)
  }
  async close(): Promise<void> {
    await this.pool.end()
  }
}
