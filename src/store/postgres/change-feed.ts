/**
 * The change feed across replicas on one PostgreSQL database: `pg_notify` after commit, and one dedicated
 * LISTEN connection per process. Notifications are wake-ups only (see src/domain/changes.ts): a replica that
 * misses some (its LISTEN connection dropped) reconnects, then wakes every consumer once to read what it missed.
 */
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { type Change, type ChangeFeed, type ChangeListener, ChangeListeners } from '../../domain/changes.js'
import type { Queryable } from '../db.js'
import type { ChangeFeedOptions } from '../notifications.js'
import { driverOptions } from './connections.js'

export const CHANGES_CHANNEL = 'agentops_changes'
/** PostgreSQL refuses payloads of 8000 bytes or more; a bigger change is sent as "look everywhere". */
const MAX_PAYLOAD = 7900
/** Notifies every payload of a JSON array of strings, in order, in one statement. */
const NOTIFY_ALL = 'SELECT pg_notify($1, p) FROM json_array_elements_text($2::json) AS p'

type Wire =
  | { o: string; k: 'e' }
  | { o: string; k: 'r'; w: string; c: string; s: number }
  | { o: string; k: 'f'; r: string }
  | { o: string; k: 'x'; i: string }
  | { o: string; k: 'a' }

export function encodeChange(origin: string, change: Change): string {
  const wire: Wire =
    change.kind === 'events'
      ? { o: origin, k: 'e' }
      : change.kind === 'records'
        ? { o: origin, k: 'r', w: change.workspaceId, c: change.connectorId, s: change.lastSeq }
        : change.kind === 'run'
          ? { o: origin, k: 'f', r: change.runId }
          : change.kind === 'key'
            ? { o: origin, k: 'x', i: change.keyId }
            : { o: origin, k: 'a' }
  const text = JSON.stringify(wire)
  return Buffer.byteLength(text) < MAX_PAYLOAD ? text : JSON.stringify({ o: origin, k: 'a' })
}

/** The change a payload names and who sent it; undefined for a payload this version does not know. */
export function decodeChange(payload: string): { origin: string; change: Change } | undefined {
  let wire: Partial<Record<string, unknown>>
  try {
    wire = JSON.parse(payload) as Partial<Record<string, unknown>>
  } catch {
    return undefined
  }
  const origin = typeof wire.o === 'string' ? wire.o : ''
  switch (wire.k) {
    case 'e':
      return { origin, change: { kind: 'events' } }
    case 'r':
      if (typeof wire.w !== 'string' || typeof wire.c !== 'string' || typeof wire.s !== 'number') return
      return {
        origin,
        change: { kind: 'records', workspaceId: wire.w, connectorId: wire.c, lastSeq: wire.s },
      }
    case 'f':
      return typeof wire.r === 'string' ? { origin, change: { kind: 'run', runId: wire.r } } : undefined
    case 'x':
      return typeof wire.i === 'string' ? { origin, change: { kind: 'key', keyId: wire.i } } : undefined
    case 'a':
      return { origin, change: { kind: 'resync' } }
    default:
      return undefined
  }
}

export class PgChangeFeed implements ChangeFeed {
  /** Tells this process's own notifications apart: it already told its listeners when it published. */
  readonly origin = randomBytes(9).toString('base64url')
  private readonly listeners: ChangeListeners
  /** The driver instance whose `listen` owns the LISTEN connection; open while the feed runs. */
  private driver: ReturnType<typeof postgres> | undefined
  private running = false
  /** Whether LISTEN was registered once already: a later registration is a reconnect. */
  private registered = false
  /** Whether the first registration failed: the one that then succeeds is a reconnect too. */
  private missedStart = false
  private publishFailing = false
  /** Encoded changes waiting for the notifying statement in flight to finish. */
  private readonly unsent = new Set<string>()
  private sending: Promise<void> | undefined
  private readonly minMs: number
  private readonly maxMs: number
  private readonly onReconnected: () => void
  private readonly log: { warn(message: string): void; info(message: string): void }

  constructor(
    private readonly url: string,
    private readonly db: Queryable,
    options: ChangeFeedOptions = {},
  ) {
    this.listeners = new ChangeListeners(options.failures)
    this.onReconnected = options.onReconnected ?? (() => {})
    this.log = options.log ?? console
    this.minMs = options.reconnectMinMs ?? 100
    this.maxMs = options.reconnectMaxMs ?? 5_000
  }

  publish(change: Change): void {
    this.listeners.deliver(change)
    if (change.kind === 'resync') return
    this.unsent.add(encodeChange(this.origin, change))
    this.sending ??= this.sendUnsent()
  }

  async flush(): Promise<void> {
    await this.sending
  }

  /**
   * One notifying statement in flight at a time: changes published meanwhile wait for it and go out together
   * in the next one, each distinct payload once (they are wake-ups, so ten "events appended" are worth one).
   * Under load this is one round trip for many writes instead of one per write; alone, a change goes at once.
   */
  private async sendUnsent(): Promise<void> {
    try {
      while (this.unsent.size > 0) {
        const payloads = JSON.stringify([...this.unsent])
        this.unsent.clear()
        try {
          await this.db.query(NOTIFY_ALL, [CHANGES_CHANNEL, payloads])
          this.publishFailing = false
        } catch (err) {
          // Other replicas still see the change on their fallback poll; say so once per failure streak.
          if (!this.publishFailing) this.log.warn(`[changes] notify failed: ${(err as Error).message}`)
          this.publishFailing = true
        }
      }
    } finally {
      this.sending = undefined
    }
  }

  subscribe(listener: ChangeListener): () => void {
    return this.listeners.add(listener)
  }

  /** Whether LISTEN has been registered and the feed runs (tests, diagnostics). */
  get listening(): boolean {
    return this.running && this.registered
  }

  /**
   * Registers LISTEN through postgres.js's `listen`: its dedicated connection reconnects by itself, with the
   * backoff given here, and registers LISTEN again; each registration after the first is a reconnect, which wakes
   * every consumer once to read what was committed while this replica was deaf. When the first registration
   * fails (the store is unreachable at start), postgres.js keeps trying, and its success counts as a reconnect.
   */
  async start(): Promise<void> {
    if (this.running) return
    this.running = true
    const driver = postgres(this.url, {
      ...driverOptions('agentops-changes'),
      max: 1,
      // Seconds before the n-th consecutive reconnect attempt (postgres.js counts failed attempts from 1).
      backoff: (attempt: number) => Math.min(this.maxMs, this.minMs * 2 ** Math.max(0, attempt - 1)) / 1000,
    })
    this.driver = driver
    try {
      await driver.listen(
        CHANGES_CHANNEL,
        (payload) => this.heard(payload),
        () => this.registeredListen(),
      )
    } catch (err) {
      this.log.warn(`[changes] LISTEN connection failed: ${(err as Error).message}; retrying`)
      this.missedStart = true
    }
  }

  /**
   * Stops listening. Changes published until now still go out first: the feed stops after the other workers,
   * whose last changes (runs the scheduler finished while stopping) would otherwise meet a closed store.
   */
  async stop(): Promise<void> {
    this.running = false
    await this.flush()
    const driver = this.driver
    this.driver = undefined
    await driver?.end({ timeout: 0 }).catch(() => {})
  }

  private heard(payload: string): void {
    const decoded = decodeChange(payload)
    if (decoded && decoded.origin !== this.origin) this.listeners.deliver(decoded.change)
  }

  private registeredListen(): void {
    if (!this.running) return
    const reconnect = this.registered || this.missedStart
    this.registered = true
    if (!reconnect) return
    this.log.info('[changes] LISTEN connection restored')
    this.onReconnected()
    // Anything committed while we were deaf is in the tables: every consumer reads after its own seq.
    this.listeners.deliver({ kind: 'resync' })
  }
}
