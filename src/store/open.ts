import type { Db } from '../domain/ports.js'

/**
 * Which store a database URL names: `postgres://` or `postgresql://`, else SQLite (`sqlite:<file>`, `file:<file>`,
 * `:memory:` or a plain path). Any other scheme is refused rather than taken for a file name (`mysql://h/db` would
 * have become the directory `mysql:`).
 */
export function storeKind(url: string): 'postgres' | 'sqlite' {
  if (/^postgres(ql)?:\/\//.test(url)) return 'postgres'
  // Two letters at least: `C:\data\agentops.db` is a path.
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]+):/.exec(url)?.[1]?.toLowerCase()
  if (scheme === undefined || scheme === 'sqlite' || scheme === 'file' || url === ':memory:') return 'sqlite'
  throw new Error(`the database URL must be sqlite:<file> or postgres://…, not a ${scheme}: URL`)
}

/** A database URL as messages may show it: the password replaced by `***`. */
export function redactedUrl(url: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/[^:/@]+:)[^@]*@/, '$1***@')
}

/**
 * The store could not be opened: says which store and where (the URL without its password), and keeps the driver's
 * error as its cause (`connect ECONNREFUSED 127.0.0.1:5432` alone named no database).
 */
export class StoreUnreachable extends Error {
  /** The store's URL without its password (a log serialises every field of an error). */
  readonly url: string

  constructor(
    readonly kind: 'postgres' | 'sqlite',
    url: string,
    cause: unknown,
  ) {
    const what = kind === 'postgres' ? 'the PostgreSQL store' : 'the SQLite store'
    super(`cannot open ${what} at ${redactedUrl(url)}: ${(cause as Error).message ?? String(cause)}`, {
      cause,
    })
    this.name = 'StoreUnreachable'
    this.url = redactedUrl(url)
  }
}

/**
 * Opens the store a database URL names, loading only its driver. `operator`: the store is opened by an operator's
 * command (the CLI) next to a running server; on SQLite its writes then announce themselves so the server makes
 * room (src/store/sqlite/operators.ts), and wait for the write lock longer than one busy timeout, telling
 * `onOperatorWait` once.
 */
export async function openDb(
  url: string,
  options: { operator?: boolean; onOperatorWait?: (totalMs: number) => void } = {},
): Promise<Db> {
  const kind = storeKind(url)
  try {
    if (kind === 'postgres') {
      const { PostgresDb } = await import('./postgres/db.js')
      return await PostgresDb.connect(url)
    }
    const { SqliteDb } = await import('./sqlite/db.js')
    return SqliteDb.open(url, options)
  } catch (err) {
    throw new StoreUnreachable(kind, url, err)
  }
}
