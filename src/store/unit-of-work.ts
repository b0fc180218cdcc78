/**
 * Units of work (Db.unitOfWork): one store transaction that every statement of an async context joins, whichever
 * Queryable the code in it holds (the Db, a repository bound to it, the hot path, a nested `transaction`). A request
 * with an Idempotency-Key runs in one, so its effect and its answer commit together (docs/design.md).
 *
 * The context is followed with AsyncLocalStorage. Work that outlives the request (wake-ups, change notifications)
 * must not run in it: it is handed to `afterCommit`, which runs it outside the context once the unit committed.
 *
 * On Node 20 an enabled AsyncLocalStorage puts a promise hook on every promise of the process, units or not (a
 * cost bench:http's GET shows against bare Hono), so the storage is enabled only while units are open and disabled
 * once none has been open for a turn of the event loop. Not at once when the last one closes: SQLite runs units one
 * after another, so keyed writes would set and clear V8's promise hooks twice a request (bench:http's keyed POST
 * profile showed it); a group of them committed together now sets them once. A context that outlives its unit can
 * see it again while the storage is enabled; `open` (false once the unit settled) is what makes such a context take
 * the ordinary path.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Queryable } from '../domain/ports.js'
import { ForwardingQueryable } from './db.js'
import { reportStoreProblem } from './problems.js'

export class Unit<Tx> {
  /** False once the unit's function settled: a late statement of its context then takes the ordinary path. */
  open = true
  private readonly after: (() => void)[] = []

  constructor(
    /** The Db that opened it: a unit of one store is nothing to another. */
    readonly owner: object,
    readonly tx: Tx,
  ) {}

  defer(fn: () => void): void {
    this.after.push(fn)
  }

  /** What waits for this unit's commit, taken away from it (a refused deferred unit hands it to the next one). */
  handOver(): (() => void)[] {
    return this.after.splice(0)
  }

  /** Runs what waited for the commit, each outside any unit's context; one that throws does not stop the others. */
  committed(): void {
    for (const fn of this.after.splice(0)) {
      storage.exit(() => {
        try {
          fn()
        } catch (err) {
          reportStoreProblem(err, 'after-commit callback failed')
        }
      })
    }
  }
}

const storage = new AsyncLocalStorage<Unit<unknown>>()

/** The open unit of `owner` this code runs in, if any. */
export function currentUnit<Tx>(owner: object): Unit<Tx> | undefined {
  const unit = storage.getStore()
  return unit?.open && unit.owner === owner ? (unit as Unit<Tx>) : undefined
}

/** Units open in this process: the storage is enabled while there is one, and for a turn after the last. */
let openUnits = 0
let disableScheduled = false

/** Disables the storage after this turn of the event loop if no unit opened meanwhile. */
function disableWhenIdle(): void {
  if (disableScheduled) return
  disableScheduled = true
  setImmediate(() => {
    disableScheduled = false
    if (openUnits === 0) storage.disable()
  }).unref()
}

/** Runs fn with `unit` as its context (and that of everything it starts); closes the unit when fn settles. */
export async function runInUnit<Tx, T>(unit: Unit<Tx>, fn: () => Promise<T>): Promise<T> {
  openUnits += 1
  try {
    return await storage.run(unit as Unit<unknown>, fn)
  } finally {
    unit.open = false
    openUnits -= 1
    if (openUnits === 0) disableWhenIdle()
  }
}

/** `fn` after the commit of the enclosing unit of `owner` (dropped if it rolls back); at once outside one. */
export function afterCommitOf(owner: object, fn: () => void): void {
  const unit = currentUnit(owner)
  if (unit) unit.defer(fn)
  else fn()
}

/**
 * `fn` outside every unit's context, whatever context calls it: for work shared by many requests (a group read's
 * statement), which must never join the transaction of the request that happened to start it.
 */
export function outsideUnits<T>(fn: () => T): T {
  return storage.exit(fn)
}

/** A Queryable that sends to the open unit's transaction when there is one, else to `outside` (the hot path). */
export class JoiningQueryable extends ForwardingQueryable {
  constructor(
    private readonly owner: object,
    private readonly outside: Queryable,
  ) {
    super()
  }

  protected target(): Queryable {
    return currentUnit<Queryable>(this.owner)?.tx ?? this.outside
  }
}
