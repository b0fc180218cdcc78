/**
 * One PostgreSQL connection that pipelines independent autocommit statements: every statement issued while the
 * event loop is busy goes out in one socket write, each with its own Sync (so each is its own transaction and a
 * failure touches no other), and the answers come back in order, often in one read. A pooled `pg` client sends
 * one statement per round trip and pays a write, a read and a wake-up for each; on this hot path (rate counts,
 * idempotency claims, reads by id) that was most of a request's CPU.
 *
 * Only statements that can never wait on a lock held by an open transaction belong here: one waiting statement
 * holds back every statement queued behind it on this connection. Reads never wait (MVCC); the writes sent here
 * touch tables that no multi-statement transaction writes (rate_counters, idempotency_keys).
 *
 * `pg` does the connecting (authentication, TLS, parameters); the pipeline then takes the connection's query
 * messages over from the client, which it never asks to run a query.
 */
import type { EventEmitter } from 'node:events'
import pg from 'pg'
import type { Row, SqlValue } from './db.js'
import { normaliseParams, SendingQueryable } from './db.js'

type Parser = (text: string) => unknown

interface Field {
  name: string
  dataTypeID: number
}

/** The part of pg's Connection this module drives: its message writers and its stream. */
interface WireConnection extends EventEmitter {
  stream: { cork(): void; uncork(): void }
  parse(query: { name: string; text: string; types: number[] }): void
  bind(config: {
    portal: string
    statement: string
    values: readonly unknown[]
    valueMapper: (v: unknown) => unknown
  }): void
  describe(msg: { type: 'P' | 'S'; name: string }): void
  execute(config: { portal: string; rows: number }): void
  close(msg: { type: 'P' | 'S'; name: string }): void
  sync(): void
}

interface Pending {
  name: string
  parsers: Parser[]
  names: string[]
  rows: Row[]
  rowCount: number
  error: unknown
  /** True when this statement's Parse went out with it: on failure the name may or may not exist server-side. */
  parsing: boolean
  resolve(result: { rows: Row[]; rowCount: number }): void
  reject(err: unknown): void
}

/** The query messages pg's Client would otherwise consume; the pipeline handles them itself. */
const TAKEN_OVER = [
  'errorMessage',
  'readyForQuery',
  'rowDescription',
  'dataRow',
  'portalSuspended',
  'emptyQuery',
  'commandComplete',
  'parseComplete',
  'copyInResponse',
  'copyData',
  'notice',
]

/**
 * pg's wire connection is not public API, so package.json pins pg to one minor version (~8.23); should another
 * version change its shape, this says so plainly instead of failing a request with a TypeError.
 */
function assertWireShape(con: WireConnection | undefined): asserts con is WireConnection {
  const methods = [
    'parse',
    'bind',
    'describe',
    'execute',
    'close',
    'sync',
    'removeAllListeners',
    'on',
  ] as const
  const missing = methods.filter(
    (m) => typeof (con as unknown as Record<string, unknown> | undefined)?.[m] !== 'function',
  )
  if (typeof con?.stream?.cork !== 'function') missing.push('stream.cork' as never)
  if (missing.length > 0) {
    throw new Error(
      `This version of pg has no wire connection the statement pipeline can drive (missing ${missing.join(', ')}); install the pg version package.json names`,
    )
  }
}

/** A parameter as pg's wire writer takes it: text, bytes or NULL. */
export function toWire(v: unknown): unknown {
  if (v === null || v === undefined) return null
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength)
  return String(v)
}

/**
 * In-flight statements on a connection before the next one takes new statements (see Pipeline.lane). On GET
 * /v1/runs/{id} at 50 connections, two paired runs gave 16 about 15% less server CPU than 4 (bigger writes); later
 * runs on the shared machine could not tell 4, 8 and 16 apart. With fsync on and many workspaces, 4 and 16 both
 * stayed above the pool's throughput. 8 sits between.
 */
const SPILL = 8

export interface PipelineOptions {
  url: string
  /**
   * Runs a statement under its name (shared with the pooled path; undefined runs it unnamed), once more unnamed
   * when the named plan turns out stale (src/store/postgres.ts StatementNames.autocommit).
   */
  autocommit<T>(text: string, run: (name: string | undefined) => Promise<T>): Promise<T>
  parserFor(oid: number): Parser
  /**
   * At most this many connections (default 1). With synchronous commit every write waits for its WAL flush
   * before the next statement on its connection runs; several connections let those waits overlap.
   */
  connections?: number
}

export class Pipeline extends SendingQueryable {
  private readonly lanes: Lane[]

  constructor(private readonly options: PipelineOptions) {
    super()
    this.lanes = Array.from(
      { length: Math.max(1, options.connections ?? 1) },
      () => new Lane(options.url, options.parserFor),
    )
  }

  async exec(): Promise<void> {
    throw new Error('The pipeline runs single statements only')
  }

  async close(): Promise<void> {
    await Promise.all(this.lanes.map((l) => l.close()))
  }

  protected send(text: string, params?: readonly SqlValue[]): Promise<{ rows: Row[]; rowCount: number }> {
    const values = normaliseParams(params)
    return this.options.autocommit(text, (name) => this.lane().submit(text, name ?? '', values))
  }

  /**
   * The first connection with fewer than SPILL statements in flight, else the least loaded one. A fast server
   * keeps the first connection's queue short, so statements share its writes and reads; when commits wait for
   * the disk (synchronous commit), queues grow and statements spill over to further connections, opened only
   * then, whose commits can wait at the same time.
   */
  private lane(): Lane {
    let best = this.lanes[0] as Lane
    for (const l of this.lanes) {
      if (l.load < SPILL) return l
      if (l.load < best.load) best = l
    }
    return best
  }
}

/** One pipelined connection. */
class Lane {
  private client: pg.Client | undefined
  private connection: WireConnection | undefined
  private connecting: Promise<WireConnection> | undefined
  /** Sent and waiting for their ReadyForQuery, oldest first. */
  private readonly inFlight: Pending[] = []
  /** Waiting for the connection to open. */
  private waiting = 0
  /** Statement names this connection holds; reset with the connection. */
  private parsed = new Set<string>()
  /** Names whose Parse failed or whose group failed: closed before they are parsed again. */
  private doubtful = new Set<string>()
  private corked = false
  private closed = false
  constructor(
    private readonly url: string,
    private readonly parserFor: (oid: number) => Parser,
  ) {}

  get load(): number {
    return this.inFlight.length + this.waiting
  }

  async close(): Promise<void> {
    this.closed = true
    const client = this.client
    this.client = undefined
    this.connection = undefined
    await client?.end().catch(() => {})
  }

  async submit(
    text: string,
    name: string,
    values: readonly unknown[],
  ): Promise<{ rows: Row[]; rowCount: number }> {
    let con = this.connection
    if (!con) {
      this.waiting++
      try {
        con = await this.connect()
      } finally {
        this.waiting--
      }
    }
    return new Promise((resolve, reject) => {
      const parsing = name === '' || !this.parsed.has(name)
      this.inFlight.push({
        name,
        parsers: [],
        names: [],
        rows: [],
        rowCount: 0,
        error: undefined,
        parsing,
        resolve,
        reject,
      })
      this.cork(con)
      if (parsing) {
        if (name !== '' && this.doubtful.delete(name)) con.close({ type: 'S', name })
        con.parse({ name, text, types: [] })
        // Optimistic: a later statement with the same text in this batch binds the name parsed just before it.
        if (name !== '') this.parsed.add(name)
      }
      con.bind({ portal: '', statement: name, values, valueMapper: toWire })
      con.describe({ type: 'P', name: '' })
      con.execute({ portal: '', rows: 0 })
      con.sync()
    })
  }

  /** Holds this turn's messages back and writes them all at once when the event loop moves on. */
  private cork(con: WireConnection): void {
    if (this.corked) return
    this.corked = true
    con.stream.cork()
    setImmediate(() => {
      this.corked = false
      con.stream.uncork()
    })
  }

  private connect(): Promise<WireConnection> {
    if (this.closed) return Promise.reject(new Error('The pipeline is closed'))
    this.connecting ??= (async () => {
      const client = new pg.Client({
        connectionString: this.url,
        application_name: 'agentops-pipeline',
      })
      // A broken connection emits 'error' and then 'end'; 'end' fails what was in flight.
      client.on('error', () => {})
      try {
        await client.connect()
      } catch (err) {
        await client.end().catch(() => {})
        throw err
      }
      // pg keeps the wire connection on an undocumented-in-types field; the pipeline owns its messages now.
      const con = (client as unknown as { connection: WireConnection }).connection
      assertWireShape(con)
      for (const event of TAKEN_OVER) con.removeAllListeners(event)
      con.on('rowDescription', (msg: { fields: Field[] }) => this.onRowDescription(msg.fields))
      con.on('dataRow', (msg: { fields: (string | null)[] }) => this.onDataRow(msg.fields))
      con.on('commandComplete', (msg: { text: string }) => this.onCommandComplete(msg.text))
      con.on('errorMessage', (err: unknown) => {
        const head = this.inFlight[0]
        if (head && head.error === undefined) head.error = err
      })
      con.on('readyForQuery', () => this.onReadyForQuery())
      client.on('end', () => this.lost(client, new Error('Connection terminated unexpectedly')))
      if (this.closed) {
        await client.end().catch(() => {})
        throw new Error('The pipeline is closed')
      }
      this.client = client
      this.connection = con
      this.parsed = new Set()
      this.doubtful = new Set()
      return con
    })().finally(() => {
      this.connecting = undefined
    })
    return this.connecting
  }

  private onRowDescription(fields: Field[]): void {
    const head = this.inFlight[0]
    if (!head) return
    head.names = fields.map((f) => f.name)
    head.parsers = fields.map((f) => this.parserFor(f.dataTypeID))
  }

  private onDataRow(values: (string | null)[]): void {
    const head = this.inFlight[0]
    if (!head || head.error !== undefined) return
    const row: Row = {}
    for (let i = 0; i < values.length; i++) {
      const v = values[i]
      row[head.names[i] as string] = v === null || v === undefined ? null : (head.parsers[i] as Parser)(v)
    }
    head.rows.push(row)
  }

  private onCommandComplete(tag: string): void {
    const head = this.inFlight[0]
    if (!head) return
    // "INSERT 0 3", "UPDATE 2", "SELECT 1": the count is the last word.
    const n = Number(tag.slice(tag.lastIndexOf(' ') + 1))
    head.rowCount = Number.isFinite(n) ? n : 0
  }

  private onReadyForQuery(): void {
    const head = this.inFlight.shift()
    if (!head) return
    if (head.error === undefined) {
      head.resolve({ rows: head.rows, rowCount: head.rowCount })
      return
    }
    if (head.parsing && head.name !== '') {
      // Whether the Parse took is unknown; the next use closes the name first (closing a missing one is fine).
      this.parsed.delete(head.name)
      this.doubtful.add(head.name)
    }
    head.reject(head.error)
  }

  private lost(client: pg.Client, err: Error): void {
    if (this.client !== client) return
    this.client = undefined
    this.connection = undefined
    this.corked = false
    for (const p of this.inFlight.splice(0)) p.reject(err)
  }
}
