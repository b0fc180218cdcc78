/** One schema change, applied once per store (`migrate`). */
export interface Migration {
  /** Ordered, never renamed once released: `001_core`. */
  id: string
  /** PostgreSQL-style DDL; the SQLite driver translates BIGSERIAL and BYTEA. */
  sql: string
}
