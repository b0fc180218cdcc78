import { performance } from 'node:perf_hooks'
import type { ApiKeyRecord, Workspace } from '../identity.js'

export interface CachedKey {
  key: ApiKeyRecord
  workspace: Workspace
}

/** A cached key with its secret's hash as bytes, ready for the constant-time comparison of every request. */
export interface VerifiedEntry extends CachedKey {
  secretHash: Buffer
  /**
   * The secret's bytes once a request presented the secret that hashes to `secretHash`: later requests compare
   * with these (constant time) instead of hashing again. Dropped with the entry (at most `ttlMs` after its row was
   * read), never stored anywhere but this process's memory, where every request's own header holds it anyway.
   */
  verifiedSecret: Buffer | undefined
}

/**
 * What the cache answers for a key id the store does not have (read less than the TTL ago): the request is refused
 * from memory, as a known key's wrong secret is, so whether a key id exists does not show in how long it takes.
 */
export const ABSENT = Symbol('absent key')
export type Absent = typeof ABSENT

export interface KeyCacheOptions {
  /** How long a row read from the store is trusted: the bound within which another replica's revocation lands. */
  ttlMs?: number
  /** Entries kept at most; the oldest goes first. */
  maxEntries?: number
  /**
   * Absent key ids kept at most, apart from the keys so that guessed ids never push a real key out; the oldest goes
   * first. Default 10,000.
   */
  maxAbsent?: number
  /** How long an absent key id is remembered; default ABSENT_TTL_MS. */
  absentTtlMs?: number
  /** Monotonic milliseconds; freshness is real elapsed time, not the domain clock tests move by hand. */
  now?: () => number
}

/** Revocation and workspace changes reach every replica within this many ms (README, decisions). */
export const KEY_CACHE_TTL_MS = 1000

/**
 * How long a key id the store did not have is remembered. Far longer than a key's TTL: an absent id cannot come to
 * exist (ids are fresh random values, and issuing one forgets it here), so nothing goes stale, while a short memory
 * would let a probe sent once per TTL wait for the store every time when a key in use never does.
 */
export const ABSENT_TTL_MS = 10 * 60 * 1000

/**
 * The share of the TTL after which an entry in use is read again in the background: late enough that a busy key
 * is read about 1.3 times per TTL (at half, twice), early enough that the read has a quarter of the TTL to come back
 * before any request would have to wait for it.
 */
export const KEY_REFRESH_AHEAD = 0.75

/** Reads a key and its workspace from the store (undefined when the key does not exist). */
export type KeyReader = (keyId: string) => Promise<CachedKey | undefined>

/**
 * Verified keys by key id, with their workspace, so an authenticated request costs no query. The secret is still
 * compared (constant time) and `expires_at` checked against the clock on every request, from the cached row; a
 * revocation or workspace change on this replica drops the entry at once, one on another replica is seen after
 * at most `ttlMs`, when the row is read again.
 *
 * Given a reader, an entry used once KEY_REFRESH_AHEAD of its TTL has passed is read again in the background while
 * it goes on answering (refresh-ahead): under steady traffic the entry is replaced before it expires, and no request
 * waits for the read. Without it every request that arrived during the read (key, then workspace: two round trips on
 * PostgreSQL) would wait for it once a second, a stall in the tail of a loaded server. The bound is unchanged: an
 * entry is trusted for the TTL from when its read was sent, whether a request or the refresh sent it.
 */
export class VerifiedKeyCache {
  private readonly entries = new Map<string, VerifiedEntry & { loadedAt: number }>()
  /** Key ids the store did not have, with when that read was sent; trusted for the TTL like an entry. */
  private readonly absent = new Map<string, number>()
  private readonly maxAbsent: number
  private readonly absentTtlMs: number
  /** Reads in flight by key id, each with the moment it was sent. */
  private readonly loading = new Map<string, { sentAt: number; entry: Promise<VerifiedEntry | undefined> }>()
  private readonly ttlMs: number
  private readonly maxEntries: number
  private readonly now: () => number
  private readonly refreshAfterMs: number

  constructor(
    options: KeyCacheOptions = {},
    /** What an entry past KEY_REFRESH_AHEAD of its TTL is read again with; none: only expired entries are read. */
    private readonly refresh?: KeyReader,
  ) {
    this.ttlMs = options.ttlMs ?? KEY_CACHE_TTL_MS
    this.maxEntries = Math.max(1, options.maxEntries ?? 10_000)
    this.maxAbsent = Math.max(1, options.maxAbsent ?? 10_000)
    this.absentTtlMs = options.absentTtlMs ?? ABSENT_TTL_MS
    this.now = options.now ?? (() => performance.now())
    this.refreshAfterMs = this.ttlMs * KEY_REFRESH_AHEAD
  }

  /**
   * The cached entry, ABSENT for a key id the store did not have (remembered for `absentTtlMs`, so probing an id
   * does not wait for the store when using a real key does not), or undefined: read the store.
   */
  get(keyId: string): VerifiedEntry | Absent | undefined {
    const entry = this.entries.get(keyId)
    if (!entry) return this.getAbsent(keyId)
    const age = this.now() - entry.loadedAt
    if (age >= this.ttlMs) {
      this.entries.delete(keyId)
      return undefined
    }
    if (age >= this.refreshAfterMs && this.refresh && !this.loading.has(keyId))
      this.refreshAhead(keyId, this.refresh)
    return entry
  }

  private getAbsent(keyId: string): Absent | undefined {
    const since = this.absent.get(keyId)
    if (since === undefined) return undefined
    if (this.now() - since < this.absentTtlMs) return ABSENT
    this.absent.delete(keyId)
    return undefined
  }

  /**
   * Reads the entry again while it still answers. A failed read changes nothing: the entry expires at its TTL and
   * the request then reads for itself, and sees the store's error.
   */
  private refreshAhead(keyId: string, read: KeyReader): void {
    // An id the read no longer finds (a key is never deleted, but a store may be swapped under a test) is
    // remembered as absent by `load`.
    this.load(keyId, () => read(keyId)).then(
      () => {},
      () => {},
    )
  }

  /**
   * The entry `read` finds for the key, shared by every request that misses while that read is in flight: an entry
   * that expires under load was otherwise read (key, then workspace) and its secret hashed by each of the requests
   * in flight at that moment, about as many as the server had connections, every second. A request joins a read
   * sent less than the TTL ago only, and the entry is trusted for the TTL from the moment its read was sent, so no
   * request is ever answered from a row read longer than the TTL before it (the bound of another replica's
   * revocation). A revocation or workspace change on this replica drops the reads in flight (forgetKey,
   * forgetWorkspace): a request that begins after it reads again, and a dropped read fills nothing.
   */
  load(keyId: string, read: () => Promise<CachedKey | undefined>): Promise<VerifiedEntry | undefined> {
    const sentAt = this.now()
    const pending = this.loading.get(keyId)
    if (pending && sentAt - pending.sentAt < this.ttlMs) return pending.entry
    const flight = {
      sentAt,
      entry: read().then(
        (found) => {
          if (this.loading.get(keyId) !== flight) return found && toEntry(found, sentAt)
          this.loading.delete(keyId)
          if (found) return this.set(keyId, found, sentAt)
          this.setAbsent(keyId, sentAt)
          return undefined
        },
        (error: unknown) => {
          if (this.loading.get(keyId) === flight) this.loading.delete(keyId)
          throw error
        },
      ),
    }
    this.loading.set(keyId, flight)
    return flight.entry
  }

  /** `loadedAt`: when the row was read (sent for); the entry is trusted for the TTL from then. */
  set(keyId: string, value: CachedKey, loadedAt = this.now()): VerifiedEntry {
    this.absent.delete(keyId)
    this.entries.delete(keyId)
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
    const entry = toEntry(value, loadedAt)
    this.entries.set(keyId, entry)
    return entry
  }

  private setAbsent(keyId: string, loadedAt: number): void {
    this.entries.delete(keyId)
    this.absent.delete(keyId)
    if (this.absent.size >= this.maxAbsent) {
      const oldest = this.absent.keys().next().value
      if (oldest !== undefined) this.absent.delete(oldest)
    }
    this.absent.set(keyId, loadedAt)
  }

  forgetKey(keyId: string): void {
    this.entries.delete(keyId)
    this.absent.delete(keyId)
    this.loading.delete(keyId)
  }

  forgetWorkspace(workspaceId: string): void {
    for (const [id, entry] of this.entries) if (entry.workspace.id === workspaceId) this.entries.delete(id)
    // A read in flight does not say its workspace yet: all are dropped (a workspace change is rare).
    this.loading.clear()
  }

  get size(): number {
    return this.entries.size
  }

  /** Absent key ids remembered now. */
  get absentSize(): number {
    return this.absent.size
  }
}

function toEntry(value: CachedKey, loadedAt: number): VerifiedEntry & { loadedAt: number } {
  return {
    key: value.key,
    workspace: value.workspace,
    secretHash: Buffer.from(value.key.secretHash, 'hex'),
    verifiedSecret: undefined,
    loadedAt,
  }
}
