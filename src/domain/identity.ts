/** Why a token was refused; all of them answer the same 401, the reason only goes into `detail`. */
export type KeyRefusal = 'missing' | 'malformed' | 'unknown' | 'expired' | 'revoked'

export type Tier = 'standard' | 'pro' | 'enterprise'

export interface Workspace {
  id: string
  name: string
  tier: Tier
  /** Sustained window quota (requests per hour). */
  limitPerHour: number
  /** Burst window quota (requests per burst window). */
  burstLimit: number
  /** The burst window's length in seconds (default DEFAULT_BURST_WINDOW_SECONDS, src/domain/limits/rate-limit.ts). */
  burstWindowSeconds: number
  /** Ingest policy classes this workspace accepts. */
  policyClasses: string[]
  /** Feature flags set per workspace (spec §9). */
  features: string[]
  /** Quotas set for this workspace over its tier's, by name (src/domain/quotas/types.ts); none: the tier's. */
  quotas?: Readonly<Partial<Record<string, number>>>
  createdAt: number
}

export interface ApiKeyRecord {
  id: string
  workspaceId: string
  identity: string
  scopes: string[]
  secretHash: string
  createdAt: number
  expiresAt: number | null
  revokedAt: number | null
}
