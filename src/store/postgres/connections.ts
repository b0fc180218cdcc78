/**
 * PostgreSQL connections and pooling: one postgres.js instance per connection (`Connection`), a few shared by many
 * callers (`SharedConnections`, pipelining) and a pool lending one to each caller in turn (`ConnectionPool`).
 */
import postgres from 'postgres'

/** Options every postgres.js instance of the store shares (the change feed's LISTEN connection included). */
export function driverOptions(applicationName: string) {
  return {
    // int8 (COUNT, BIGINT, BIGSERIAL) arrives as text; our values stay far below 2^53.
    types: {
      int8: { to: 20, from: [20], parse: (v: string) => Number(v), serialize: (v: number) => String(v) },
      // A value bound to a json parameter is JSON text already (SQL is written once for both drivers); postgres.js
      // would otherwise encode it again, as a JSON string.
      json: {
        to: 114,
        from: [114, 3802],
        parse: (v: string): unknown => JSON.parse(v),
        serialize: (v: string) => v,
      },
    },
    // A ROLLBACK after a failed COMMIT warns "no transaction in progress": nothing an operator needs to read.
    onnotice: () => {},
    // No lifetime closing (and no `idle_timeout`, off by default): postgres.js counts a connection idle between two
    // statements of a transaction on it, and would close it there, rolling the transaction back.
    max_lifetime: null,
    connection: { application_name: applicationName },
  }
}

function openDriver(url: string, applicationName: string, onclose: () => void) {
  return postgres(url, { ...driverOptions(applicationName), max: 1, onclose })
}

export type Driver = ReturnType<typeof openDriver>

/** Driver and socket codes that end a session (postgres.js's own, and Node's for a broken socket). */
const SESSION_ENDING_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
])

/**
 * Whether a statement's error says its session is gone: a broken socket, a FATAL or PANIC from the server, or a
 * connection exception (class 08) or operator intervention ending sessions (57P01-57P04: shutdown, crash, database
 * dropped). A server error that only fails the statement (a constraint, a lock timeout) leaves the session usable.
 */
export function endsSession(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false
  const { code, severity } = err as { code?: unknown; severity?: unknown }
  if (severity === 'FATAL' || severity === 'PANIC') return true
  return (
    typeof code === 'string' &&
    (SESSION_ENDING_CODES.has(code) || code.startsWith('08') || code.startsWith('57P'))
  )
}

/**
 * Seconds a closing store waits for statements in flight before it drops its connections. postgres.js would
 * otherwise wait for ever on a connection the server dropped in the middle of a statement.
 */
const CLOSE_TIMEOUT_S = 5

/**
 * One connection: a postgres.js instance of at most one connection, which pipelines what is sent to it. Once
 * its connection closed (the server restarted, the network failed, it sat idle), the instance is never used
 * again: the next use gets a fresh one. postgres.js 3.4 would reconnect it, but a connection that closed while
 * reserved or while a write was buffered can then crash the process or never write again (porsager/postgres
 * #1199, #1208); and a transaction must not go on, unknowingly, on a new session.
 */
export class Connection {
  private current: Driver
  /** Whether `current` closed: what was sent on it has failed or finished, and nothing more may go. */
  lost = false
  /** Statements sent on it and not yet answered (the pipeline's choice of connection). */
  load = 0
  /** Whether `current`'s session is open: only then is anything but its opening statement sent on it. */
  private opened = false
  /** The opening statement in flight on `current`, which every sender waits for. */
  private opening: Promise<Driver> | undefined

  constructor(
    private readonly url: string,
    private readonly applicationName: string,
  ) {
    this.current = this.instance()
  }

  private instance(): Driver {
    const driver: Driver = openDriver(this.url, this.applicationName, () => {
      if (this.current === driver) this.lost = true
    })
    return driver
  }

  /** The instance to send on when its session is open (no wait): else undefined, and `open` gives it. */
  get openDriver(): Driver | undefined {
    return this.opened && !this.lost ? this.current : undefined
  }

  /**
   * The instance to send on, once its session is open; a lost one is replaced first. What is sent to postgres.js
   * while it connects waits in a queue that the new session takes only in part at first (half of it, the rest
   * being meant for other connections still connecting), and statements sent after that go before the rest: they
   * would run out of the order they were sent in, and a deferred unit's BEGIN … COMMIT would take in statements of
   * others sharing the connection (porsager/postgres #747). So a session's first statement is its opening alone, and
   * senders wait for it.
   */
  open(): Promise<Driver> {
    if (this.lost) this.renew()
    if (this.opened) return Promise.resolve(this.current)
    this.opening ??= this.openSession(this.current)
    return this.opening
  }

  private async openSession(driver: Driver): Promise<Driver> {
    try {
      await driver.unsafe('SELECT 1').execute()
      if (driver === this.current) this.opened = true
      return driver
    } catch (err) {
      // The next sender starts over on a fresh instance.
      if (driver === this.current) this.lost = true
      throw err
    } finally {
      if (driver === this.current) this.opening = undefined
    }
  }

  /** The instance a transaction began on, open or lost (its ROLLBACK, its failures). */
  get driver(): Driver {
    return this.current
  }

  /**
   * Told of a statement's failure on `driver`: when the error ends the session, the connection is lost now. postgres.js
   * reports a reset socket to the statements in flight before it reports the close (onclose), and a statement sent in
   * between waits for ever (porsager/postgres #1208): a ROLLBACK after the failure would hang its request and keep
   * its connection lent.
   */
  failed(driver: Driver, err: unknown): void {
    if (driver === this.current && endsSession(err)) this.lost = true
  }

  renew(): void {
    void this.current.end({ timeout: 0 }).catch(() => {})
    this.current = this.instance()
    this.lost = false
    this.opened = false
    this.opening = undefined
  }

  end(): Promise<void> {
    // A lost connection has nothing in flight to wait for, and postgres.js would wait the whole timeout on it.
    return this.current.end({ timeout: this.lost ? 0 : CLOSE_TIMEOUT_S })
  }
}

/**
 * In-flight statements on a pipelined connection before the next connection takes new statements: more per
 * connection means bigger socket writes and less server CPU per statement (bench:http's PostgreSQL GET); with
 * synchronous commit, statements then spill over to further connections, whose WAL flushes overlap.
 */
const SPILL = 8

/**
 * A few connections that many callers share, each statement sent at once on one of them (pipelining); `load` counts
 * what is in flight on each.
 */
export class SharedConnections {
  private readonly connections: Connection[]

  constructor(url: string, size: number, applicationName: string) {
    this.connections = Array.from({ length: size }, () => new Connection(url, applicationName))
  }

  /**
   * The first connection with fewer than SPILL statements in flight, else the least loaded: a fast server keeps
   * the first one's queue short, so statements share its writes and reads; a slow commit lets queues grow and
   * spill over to further connections, opened only then.
   */
  pick(): Connection {
    let best = this.connections[0] as Connection
    for (const c of this.connections) {
      if (c.load < SPILL) return c
      if (c.load < best.load) best = c
    }
    return best
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.end()))
  }
}

/**
 * Connections lent to one caller at a time (a transaction, or one statement), with callers waiting in turn when
 * all are lent; counted here, so a metrics scrape can read how many are lent and waited for.
 */
export class ConnectionPool {
  private readonly all: Connection[]
  private readonly free: Connection[]
  private readonly waiting: ((c: Connection) => void)[] = []
  private lent = 0
  private closed = false

  constructor(
    url: string,
    private readonly size: number,
  ) {
    this.all = Array.from({ length: size }, () => new Connection(url, 'agentops'))
    this.free = [...this.all]
  }

  /** A connection whose session is open (Connection.open), lent until `release`. */
  async acquire(): Promise<Connection> {
    if (this.closed) throw new Error('The store is closed')
    let c = this.free.pop()
    if (c) this.lent++
    else c = await new Promise<Connection>((resolve) => this.waiting.push(resolve))
    if (c.openDriver) return c
    try {
      await c.open()
    } catch (err) {
      this.release(c)
      throw err
    }
    return c
  }

  release(c: Connection): void {
    // A connection lost while lent is replaced: its session (and any transaction on it) is gone.
    if (c.lost) c.renew()
    const next = this.waiting.shift()
    if (next) next(c)
    else {
      this.lent--
      this.free.push(c)
    }
  }

  figures(): { total: number; idle: number; waiting: number } {
    return { total: this.size, idle: this.size - this.lent, waiting: this.waiting.length }
  }

  async end(): Promise<void> {
    this.closed = true
    await Promise.all(this.all.map((c) => c.end()))
  }
}
