/**
 * The storage boundary: repositories write SQL once, in PostgreSQL style ($1 placeholders, BIGSERIAL,
 * ON CONFLICT, RETURNING), and run it on either driver. The SQLite driver rewrites placeholders and
 * serialises access, because one better-sqlite3 connection cannot interleave async transactions.
 */
import type { Db, Queryable, Row, SqlValue } from '../domain/ports.js'

// The interfaces are the domain's port (src/domain/ports.ts); the store's modules import them from here.
export type { Db, Dialect, Queryable, Row, SqlValue } from '../domain/ports.js'

/**
 * A store that can pipeline independent single statements (PostgreSQL, src/store/postgres/). Only statements
 * that never wait on a transaction's locks go there: reads, and writes to tables no transaction writes.
 */
export interface Pipelined {
  readonly pipeline: Queryable
  /** The pipeline, or the open unit of work's transaction when the caller runs in one (src/store/unit-of-work.ts). */
  readonly hot: Queryable
}

/**
 * Where a repository sends its lock-free single statements: the pipeline when the driver has one (inside a unit of
 * work, its transaction, so a read sees the unit's own writes).
 */
export function hotPath(db: Db): Queryable {
  return 'pipeline' in db ? (db as Db & Pipelined).hot : db
}

/**
 * A transaction that can hold statements back and send them in the same write as its COMMIT (PostgreSQL). What
 * must come last and hold its lock briefly, the event log's ordered append, then costs no round trip of its own,
 * and its lock is held for the COMMIT only, not across the event loop's turns between statements. A held-back
 * statement's result is not seen; a failure rolls the whole transaction back.
 */
export interface CommitTail {
  atCommit(sql: string, params?: readonly SqlValue[], order?: InOneStatement): void
  /** A deferred unit's (Db.deferredUnitOfWork) only: held back too, and sent before every `atCommit` statement. */
  atBegin?(sql: string, params?: readonly SqlValue[], order?: InOneStatement): void
  /**
   * Held back like `atCommit`, a statement that may refuse the write (a quota's count). Its failure that `refusal`
   * recognises fails the commit with the error `refusal.settle` words once the transaction has ended; `answered`
   * gets its rows once the transaction committed.
   */
  refusableAtCommit?(
    sql: string,
    params: readonly SqlValue[],
    refusal: RefusalAtCommit,
    answered?: (rows: readonly Row[]) => void,
    order?: InOneStatement,
  ): void
  /** Held back with the counts, before every `atCommit` statement: a count that cannot refuse (a give-back). */
  countAtCommit?(sql: string, params: readonly SqlValue[], order?: InOneStatement): void
}

/**
 * How a held-back statement keeps its place when a deferred unit with counts is sent as one statement
 * (src/store/ordered-statement.ts), where PostgreSQL would otherwise run the writes in an order of its own. Without
 * it, the unit is sent as its statements, one after another. The text given with it stays the one sent otherwise.
 */
export type InOneStatement =
  /** It waits for no lock another transaction may hold (a fresh id's row, a lock only tried): any place will do. */
  | 'waits-for-nothing'
  /**
   * Its text made to run only once the WITH query `after` has run (by reading all of that query's RETURNING rows
   * before taking any lock of its own); with `after` null, as it stands. A count's text returns rows.
   */
  | { after: (after: string | null) => string }

/** Where a count that may refuse the write is held back, when the transaction's driver has a commit tail. */
export function refusableAtCommitOf(q: Queryable): CommitTail['refusableAtCommit'] {
  const tail = commitTailOf(q)
  return tail?.refusableAtCommit?.bind(tail)
}

/** How a held-back statement's refusal is told from a store failure, and worded for the caller. */
export interface RefusalAtCommit {
  /** Whether the statement's error is the refusal (a constraint the statement fails on purpose). */
  matches(err: unknown): boolean
  /** The caller's error, worded after the transaction ended (it may read the store: the connection is free). */
  settle(): Promise<Error>
}

/** A commit failed by a held-back statement's refusal (RefusalAtCommit): the transaction's runner settles it. */
export class RefusedAtCommit extends Error {
  constructor(
    readonly refusal: RefusalAtCommit,
    cause: unknown,
  ) {
    super('A held-back statement refused the write', { cause })
  }
}

/** The error a transaction that failed with `err` ends with: a refusal at commit worded by its owner. */
export async function settledFailure(err: unknown): Promise<unknown> {
  return err instanceof RefusedAtCommit ? err.refusal.settle() : err
}

/**
 * Where a read of rows a unit of work does not write goes: the unit's transaction, or, in a deferred unit (which
 * sends nothing before its commit), `outside`.
 */
export function readerIn(tx: Queryable, outside: Queryable): Queryable {
  if (!commitTailOf(tx)?.atBegin) return tx
  // The store's own statements would join the open unit: its pipeline does not.
  return 'pipeline' in outside ? (outside as Queryable & Pipelined).pipeline : outside
}

/** One quota count of a UsageLedger: `amount` more of the workspace's `quota` (in `scope`), within `limit`. */
export interface QuotaCount {
  workspaceId: string
  quota: string
  scope: string
  amount: number
  limit: number
}

/**
 * A transaction whose driver keeps quota counts in memory until its COMMIT (SQLite's batch:
 * src/store/sqlite/usage-ledger.ts), exact as the usage rows they stand for.
 */
export interface UsageLedger {
  /** Every count within its limit, counted all or none: whether they were, and each usage after (or as it stands). */
  take(counts: readonly QuotaCount[]): { taken: boolean; used: number[] }
}

/** The transaction's usage ledger when its driver keeps one and the transaction is open. */
export function usageLedgerOf(q: Queryable): UsageLedger | undefined {
  return 'usageLedger' in q
    ? (q as Queryable & { usageLedger: UsageLedger | undefined }).usageLedger
    : undefined
}

/** The transaction's commit tail when its driver has one. */
export function commitTailOf(q: Queryable): CommitTail | undefined {
  return 'atCommit' in q ? (q as Queryable & CommitTail) : undefined
}

/** A driver that reports how long each transaction took, from its start to its acknowledged COMMIT (metrics). */
export interface TransactionTiming {
  timeTransactions(observe: (seconds: number) => void): void
}

export function timesTransactions(db: Db): db is Db & TransactionTiming {
  return 'timeTransactions' in db
}

/** Where a statement ran on PostgreSQL: the hot path's pipeline, a pooled connection, or a transaction. */
export type StatementPath = 'pipeline' | 'pool' | 'transaction'

/** A driver that reports each statement's latency, from its sending to its answer (metrics). */
export interface StatementTiming {
  timeStatements(observe: (path: StatementPath, seconds: number) => void): void
}

export function timesStatements(db: Db): db is Db & StatementTiming {
  return 'timeStatements' in db
}

/** What one statement answered: its rows (empty for a write without RETURNING) and how many rows it touched. */
export interface StatementResult {
  rows: Row[]
  rowCount: number | null
}

/** `query`, `one` and `run` over one `send`: the shape the PostgreSQL queryables (pool, transaction, pipeline) share. */
export abstract class SendingQueryable implements Queryable {
  protected abstract send(sql: string, params?: readonly SqlValue[]): Promise<StatementResult>
  abstract exec(script: string): Promise<void>

  async query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return (await this.send(sql, params)).rows as T[]
  }
  async one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return (await this.send(sql, params)).rows[0] as T | undefined
  }
  async run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return (await this.send(sql, params)).rowCount ?? 0
  }
}

/** `query`, `one`, `run` and `exec`, each sent to the Queryable `target` names when it is called. */
export abstract class ForwardingQueryable implements Queryable {
  protected abstract target(): Queryable

  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.target().query<T>(sql, params)
  }
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.target().one<T>(sql, params)
  }
  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.target().run(sql, params)
  }
  exec(script: string): Promise<void> {
    return this.target().exec(script)
  }
}

/** Booleans become 0/1 and undefined becomes NULL so the same SQL binds on both drivers. */
export function normaliseParams(
  params: readonly SqlValue[] = [],
): (string | number | bigint | null | Uint8Array | readonly string[] | readonly number[])[] {
  return params.map((p) => {
    if (p === undefined || p === null) return null
    if (typeof p === 'boolean') return p ? 1 : 0
    return p
  })
}

/**
 * Whether a statement failed with one of `codes` (PostgreSQL's SQLSTATE) raised on `table`: the refusals some
 * statements are written to make (a NOT NULL a CASE leaves empty, a unique index), told from any other failure.
 */
export function failedOn(err: unknown, table: string, codes: readonly string[]): boolean {
  if (typeof err !== 'object' || err === null) return false
  const { code, table_name } = err as { code?: unknown; table_name?: unknown }
  return typeof code === 'string' && codes.includes(code) && table_name === table
}

/** JSON columns are TEXT on both drivers. */
export function toJson(value: unknown): string {
  return JSON.stringify(value ?? null)
}

export function fromJson<T>(text: unknown): T {
  if (typeof text !== 'string') return text as T
  return JSON.parse(text) as T
}
