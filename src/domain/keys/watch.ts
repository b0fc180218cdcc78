import type { Clock } from '../clock.js'
import { CONSOLE_FAILURE_LOG, type FailureLog } from '../failure-log.js'
import type { KeyRepository } from './ports.js'

/** Why a watched key stopped being valid. */
export type KeyEnd = 'revoked' | 'expired'

/**
 * The keys behind open sockets (/v1/stream, graphql-ws), so a revoke or an expiry closes them at once instead of
 * at the next heartbeat. Three ways a key's end is heard: a revoke through this process (`end`, called after the
 * revoke committed), a revoke announced by another replica or the CLI over the change feed (`end` again), and a
 * read of the watched keys from the store every `pollMs` (expiry, and a revoke whose announcement was
 * lost or could not be made: the CLI on SQLite writes the file from another process). The poll runs only while
 * some key is watched.
 */
export class KeyWatch {
  private readonly watchers = new Map<string, Set<(end: KeyEnd) => void>>()
  private timer: NodeJS.Timeout | undefined
  private polling = false

  constructor(
    private readonly keys: KeyRepository,
    private readonly clock: Clock,
    /**
     * How often watched keys are read again, at least 1 ms (config.ts): bounds how late an expiry or a revoke nobody
     * announced is seen. The watch is the one way a key's end reaches its open sockets.
     */
    private readonly pollMs: number,
    private readonly failures: FailureLog = CONSOLE_FAILURE_LOG,
    /**
     * Told of each revoke the poll finds (the verified-key cache forgets the key): once the sockets of a revoked key
     * are closed, a new request with its token is refused too, not accepted from memory until the cache's TTL.
     */
    private readonly revokeFound: (keyId: string) => void = () => {},
  ) {}

  /** Calls `onEnd` once when the key is revoked or expires; the returned function stops watching. */
  watch(keyId: string, onEnd: (end: KeyEnd) => void): () => void {
    let set = this.watchers.get(keyId)
    if (!set) {
      set = new Set()
      this.watchers.set(keyId, set)
    }
    set.add(onEnd)
    if (!this.timer) {
      this.timer = setInterval(() => void this.poll(), this.pollMs)
      this.timer.unref()
    }
    return () => {
      const current = this.watchers.get(keyId)
      current?.delete(onEnd)
      if (current?.size === 0) this.watchers.delete(keyId)
      this.idle()
    }
  }

  /** The key is no longer valid: tells (and forgets) every watcher of it, synchronously. */
  end(keyId: string, why: KeyEnd): void {
    const set = this.watchers.get(keyId)
    if (!set) return
    this.watchers.delete(keyId)
    for (const onEnd of set) {
      try {
        onEnd(why)
      } catch (err) {
        this.failures.error({ err }, 'key watcher failed')
      }
    }
    this.idle()
  }

  /** Reads every watched key again; one poll at a time. */
  async poll(): Promise<void> {
    if (this.polling) return
    // Stryker disable next-line BooleanLiteral: equivalent, two polls at once read the same rows and a key's end is told once (end() forgets its watchers first)
    this.polling = true
    try {
      for (const keyId of [...this.watchers.keys()]) {
        const key = await this.keys.byId(keyId).catch(() => undefined) // the store hiccuped: next poll
        // Stryker disable next-line OptionalChaining: reached only when the store fails a key's read (caught as undefined) or its row is gone, which no black-box run provokes
        if (key?.revokedAt !== null && key?.revokedAt !== undefined) {
          this.revokeFound(keyId)
          this.end(keyId, 'revoked')
        } else if (key && key.expiresAt !== null && key.expiresAt <= this.clock.now())
          this.end(keyId, 'expired')
      }
    } finally {
      this.polling = false
    }
  }

  // Stryker disable next-line BlockStatement: stopping the poll once no key is watched: the server's resources, a poll over no key changes nothing
  private idle(): void {
    // Stryker disable next-line BlockStatement: stopping the poll once no key is watched: the server's resources, a poll over no key changes nothing
    if (this.watchers.size === 0 && this.timer) {
      clearInterval(this.timer)
      this.timer = undefined
    }
  }
}
