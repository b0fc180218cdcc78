/**
 * The store's contract with the domain: a database handle (opened by src/store/open.ts) that runs statements, transactions
 * and units of work. Each feature declares its own repositories and ports beside it (`<feature>/ports.ts`); the
 * store implements them and the composition root (src/services.ts) wires them. This file names no feature.
 */

// --- the database handle -------------------------------------------------------------------------------------

/**
 * A bound value. Arrays are PostgreSQL's (`unnest($1::text[])`: a whole batch in one statement); the embedded
 * store's driver refuses them, so SQL that binds one runs on PostgreSQL only.
 */
export type SqlValue =
  | string
  | number
  | bigint
  | boolean
  | null
  | undefined
  | Uint8Array
  | readonly string[]
  | readonly number[]
export type Row = Record<string, unknown>

/** A connection or an open transaction. Only repositories send SQL through it; services just hand it on. */
export interface Queryable {
  /** All rows. */
  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]>
  /** First row or undefined. */
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>
  /** Number of rows changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>
  /** Runs a multi-statement script (migrations); no parameters. */
  exec(script: string): Promise<void>
}

export type Dialect = 'sqlite' | 'postgres'

export interface Db extends Queryable {
  readonly dialect: Dialect
  /**
   * Runs fn in one transaction; commits when it resolves, rolls back when it throws. Inside a unit of work it joins
   * the unit's transaction: its failure then fails the unit.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /**
   * Runs fn as one unit of work: every statement and transaction of its async context, whatever Queryable it goes
   * through, joins one store transaction, committed when fn resolves and rolled back when it throws; it resolves
   * after the COMMIT. A request with an Idempotency-Key runs in one, so its effect and its answer commit together.
   */
  unitOfWork<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /**
   * Runs fn once the enclosing unit of work committed, outside its context (dropped if it rolls back); at once
   * outside a unit. Work that outlives a write (wake-ups, change notifications) starts through here.
   */
  afterCommit(fn: () => void): void
  /** Whether the caller is inside an open unit of work: what it reads may not be committed yet (caches stay out). */
  inUnitOfWork(): boolean
  /**
   * A unit of work that sends nothing before its commit (PostgreSQL only; absent elsewhere): its held-back writes
   * then go out as one atomic statement, on a connection other units' commits share, so a unit costs one round trip
   * whatever else is in flight. For work whose every statement is a write held back until the commit (the store's
   * CommitTail) and independent of the others (they may run as one statement, on one snapshot: none may depend on
   * another's effect); a statement that needs an answer fails the unit. A refused commit throws
   * DeferredCommitRefused, whose `resume` hands the unit's writes on to another unit.
   */
  deferredUnitOfWork?<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  close(): Promise<void>
}

/**
 * A deferred unit of work's COMMIT was refused (`cause`, the store's error): nothing of it was kept. Called inside
 * another unit of work of the same store, `resume` gives that unit the refused one's writes and what waited for
 * its commit, so the work commits there without being done again.
 */
export class DeferredCommitRefused extends Error {
  constructor(
    cause: unknown,
    readonly resume: () => void,
  ) {
    super('The deferred unit of work was refused at its commit', { cause })
  }
}

// --- repositories: each is bound to the Db; `in(tx)` is the same repository inside a transaction ------------------

/** What every transaction-bound repository offers, whichever feature declares it. */
export interface TxBound<R> {
  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): R
}
