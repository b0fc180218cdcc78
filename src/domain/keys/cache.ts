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

export interface KeyCacheOptions {
  /** How long a row read from the store is trusted: the bound within which another replica's revocation lands. */
  ttlMs?: number
  /** Entries kept at most; the oldest goes first. */
  maxEntries?: number
  /** Monotonic milliseconds; freshness is real elapsed time, not the domain clock tests move by hand. */
  now?: () => number
}

/** Revocation and workspace changes reach every replica within this many ms (README, decisions). */
export const KEY_CACHE_TTL_MS = 1000

/**
 * Verified keys by key id, with their workspace, so an authenticated request costs no query. The secret is still
 * compared (constant time) and `expires_at` checked against the clock on every request, from the cached row; a
 * revocation or workspace change on this replica drops the entry at once, one on another replica is seen after
 * at most `ttlMs`, when the row is read again.
 */
export class VerifiedKeyCache {
  private readonly entries = new Map<string, VerifiedEntry & { loadedAt: number }>()
  private readonly ttlMs: number
  private readonly maxEntries: number
  private readonly now: () => number

  constructor(options: KeyCacheOptions = {}) {
    this.ttlMs = options.ttlMs ?? KEY_CACHE_TTL_MS
    this.maxEntries = Math.max(1, options.maxEntries ?? 10_000)
    this.now = options.now ?? (() => performance.now())
  }

  get(keyId: string): VerifiedEntry | undefined {
    const entry = this.entries.get(keyId)
    if (!entry) return undefined
    if (this.now() - entry.loadedAt >= this.ttlMs) {
      this.entries.delete(keyId)
      return undefined
    }
    return entry
  }

  set(keyId: string, value: CachedKey): VerifiedEntry {
    this.entries.delete(keyId)
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
    const entry = {
      key: value.key,
      workspace: value.workspace,
      secretHash: Buffer.from(value.key.secretHash, 'hex'),
      verifiedSecret: undefined,
      loadedAt: this.now(),
    }
    this.entries.set(keyId, entry)
    return entry
  }

  forgetKey(keyId: string): void {
    this.entries.delete(keyId)
  }

  forgetWorkspace(workspaceId: string): void {
    for (const [id, entry] of this.entries) if (entry.workspace.id === workspaceId) this.entries.delete(id)
  }

  get size(): number {
    return this.entries.size
  }
}
