import type { Queryable, Row, SqlValue } from '../../src/domain/ports.js'

export interface CapturedStatement {
  sql: string
  params: readonly SqlValue[]
}

/** A Queryable that runs every statement on the store and remembers it, so its plan can be asked for afterwards. */
export class StatementCapture implements Queryable {
  readonly statements: CapturedStatement[] = []
  constructor(private readonly db: Queryable) {}
  query<T extends Row = Row>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    this.statements.push({ sql, params })
    return this.db.query<T>(sql, params)
  }
  one<T extends Row = Row>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    this.statements.push({ sql, params })
    return this.db.one<T>(sql, params)
  }
  run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    this.statements.push({ sql, params })
    return this.db.run(sql, params)
  }
  exec(script: string): Promise<void> {
    return this.db.exec(script)
  }
}
