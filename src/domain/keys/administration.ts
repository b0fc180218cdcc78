/**
 * Key issuance and workspace settings: what the operator's CLI (`agentops keys ...`) and the conformance
 * provisioning do, never an API request (§5: "How keys are issued and rotated: not shown"). Verifying a request's
 * key is KeyService's (./service.ts); this module tells it when a key or workspace it may have cached changed.
 */
import { randomBytes } from 'node:crypto'
import type { ChangeFeed } from '../changes.js'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Tier, Workspace } from '../identity.js'
import { newId } from '../ids.js'
import { DEFAULT_BURST_WINDOW_SECONDS } from '../limits/rate-limit.js'
import type { VerifiedKeyCache } from './cache.js'
import type { KeyRepository, WorkspaceRepository } from './ports.js'
import {
  DEFAULT_POLICY_CLASSES,
  hashSecret,
  type IssuedKey,
  type IssueKeyInput,
  TIER_DEFAULTS,
  TOKEN_PATTERN,
  type WorkspaceSettings,
} from './service.js'
import type { KeyWatch } from './watch.js'

/** The id of the key a token of this server belongs to (its secret unchecked), or undefined for another string. */
export function keyIdOfToken(token: string): string | undefined {
  const id = TOKEN_PATTERN.exec(token)?.[1]
  return id === undefined ? undefined : `key_${id}`
}

/** A workspace's tier as its settings give it: an hourly figure of its own without a tier makes it enterprise. */
function tierOf(settings: WorkspaceSettings): Tier {
  return settings.tier ?? (settings.limitPerHour !== undefined ? 'enterprise' : 'standard')
}

function resolveLimits(settings: WorkspaceSettings): {
  tier: Tier
  limitPerHour: number
  burstLimit: number
  burstWindowSeconds: number
} {
  const tier = tierOf(settings)
  const defaults = TIER_DEFAULTS[tier]
  const limitPerHour =
    tier === 'enterprise' ? (settings.limitPerHour ?? defaults.limitPerHour) : defaults.limitPerHour
  const burstLimit =
    settings.burstLimit ??
    (tier === 'enterprise' && settings.limitPerHour !== undefined
      ? Math.max(1, Math.floor(limitPerHour / 10))
      : defaults.burstLimit)
  const burstWindowSeconds = settings.burstWindowSeconds ?? DEFAULT_BURST_WINDOW_SECONDS
  return { tier, limitPerHour, burstLimit, burstWindowSeconds }
}

/**
 * An hourly figure of the operator's own is an enterprise workspace's ("Enterprise tier: Custom limits", §8); the
 * standard and pro tiers' figures are §8's. Given for another tier, it is refused rather than dropped unsaid.
 */
function refuseOwnHourlyFigure(tier: Tier, limitPerHour: number | undefined): void {
  if (limitPerHour === undefined || tier === 'enterprise') return
  const figure = TIER_DEFAULTS[tier].limitPerHour
  throw new ApiError(
    'invalid_request',
    `A ${tier} workspace's hourly limit is the tier's ${figure} requests (spec §8); only an enterprise workspace takes its own: set the tier to enterprise with it`,
    { field: 'limit_per_hour', tier, tier_limit_per_hour: figure },
  )
}

/** Issues, lists and revokes keys, and creates and configures workspaces. */
export class KeyAdministration {
  constructor(
    private readonly keys: KeyRepository,
    private readonly workspaces: WorkspaceRepository,
    private readonly clock: Clock,
    /** Where revokes are announced to the other replicas and processes on the same store. */
    private readonly changes: ChangeFeed | undefined,
    /** This process's verified keys: a key or workspace changed here is read again at its next use. */
    private readonly cache: Pick<VerifiedKeyCache, 'forgetKey' | 'forgetWorkspace'>,
    /** This process's open sockets by key: a revoke with no change feed to announce it closes them here. */
    private readonly watch: Pick<KeyWatch, 'end'>,
  ) {}

  /** Creates the workspace on first use (its settings apply then, or update it when given later) and a key in it. */
  async issue(input: IssueKeyInput): Promise<IssuedKey> {
    const workspace = await this.ensureWorkspace(input.workspace, input)
    const now = this.clock.now()
    const keyId = newId('key', now)
    const secret = randomBytes(32).toString('base64url')
    // Absent means every scope; an empty list is a key with none, never widened to every scope.
    const scopes = input.scopes ?? ['*']
    const expiresAt = input.expiresInSeconds !== undefined ? now + input.expiresInSeconds * 1000 : null
    await this.keys.insert({
      id: keyId,
      workspaceId: workspace.id,
      identity: input.identity ?? 'default',
      scopes,
      secretHash: hashSecret(secret),
      createdAt: now,
      expiresAt,
      revokedAt: null,
    })
    // A fresh random id is never one this process remembers as absent; if it were, it is not any more.
    this.cache.forgetKey(keyId)
    return {
      token: `aok_${keyId.slice(4)}_${secret}`,
      key_id: keyId,
      workspace_id: workspace.id,
      workspace: workspace.name,
      identity: input.identity ?? 'default',
      scopes,
      tier: workspace.tier,
      limit_per_hour: workspace.limitPerHour,
      burst_limit: workspace.burstLimit,
      burst_window_seconds: workspace.burstWindowSeconds,
      expires_at: expiresAt === null ? null : new Date(expiresAt).toISOString(),
    }
  }

  async ensureWorkspace(name: string, settings: WorkspaceSettings): Promise<Workspace> {
    const existing = await this.workspaces.byName(name)
    if (existing) {
      const changed = Object.values(settings).some((v) => v !== undefined)
      return changed ? this.configureWorkspace(name, settings) : existing
    }
    refuseOwnHourlyFigure(tierOf(settings), settings.limitPerHour)
    const limits = resolveLimits(settings)
    return this.workspaces.insertIfAbsent({
      id: newId('ws', this.clock.now()),
      name,
      ...limits,
      policyClasses: settings.policyClasses ?? DEFAULT_POLICY_CLASSES,
      features: settings.features ?? [],
      quotas: settings.quotas ?? {},
      createdAt: this.clock.now(),
    })
  }

  async configureWorkspace(name: string, settings: WorkspaceSettings): Promise<Workspace> {
    const existing = await this.workspaces.byName(name)
    if (!existing) return this.ensureWorkspace(name, settings)
    refuseOwnHourlyFigure(settings.tier ?? existing.tier, settings.limitPerHour)
    const tierChanged = settings.tier !== undefined && settings.tier !== existing.tier
    // The window's length is no tier default: a tier change keeps it, as every other change does unless it sets it.
    const burstWindowSeconds = settings.burstWindowSeconds ?? existing.burstWindowSeconds
    const limits =
      tierChanged || settings.limitPerHour !== undefined || settings.burstLimit !== undefined
        ? resolveLimits({
            tier: settings.tier ?? existing.tier,
            limitPerHour: settings.limitPerHour ?? (tierChanged ? undefined : existing.limitPerHour),
            burstLimit: settings.burstLimit ?? (tierChanged ? undefined : existing.burstLimit),
            burstWindowSeconds,
          })
        : {
            tier: existing.tier,
            limitPerHour: existing.limitPerHour,
            burstLimit: existing.burstLimit,
            burstWindowSeconds,
          }
    const updated: Workspace = {
      ...existing,
      ...limits,
      policyClasses: settings.policyClasses ?? existing.policyClasses,
      features: settings.features ?? existing.features,
      quotas: settings.quotas ? { ...existing.quotas, ...settings.quotas } : (existing.quotas ?? {}),
    }
    await this.workspaces.update(updated)
    this.cache.forgetWorkspace(updated.id)
    return updated
  }

  async list(workspaceName: string) {
    const ws = await this.workspaces.byName(workspaceName)
    if (!ws) return []
    return (await this.keys.listByWorkspace(ws.id)).map((k) => ({
      key_id: k.id,
      identity: k.identity,
      scopes: k.scopes,
      created_at: new Date(k.createdAt).toISOString(),
      expires_at: k.expiresAt === null ? null : new Date(k.expiresAt).toISOString(),
      revoked_at: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString(),
    }))
  }

  /**
   * Revokes the key, then announces it (this process's sockets close at once, other replicas' as soon as they
   * hear it) and waits until the announcement left, so a CLI that exits next does not take it with it.
   */
  async revoke(keyId: string): Promise<boolean> {
    const revoked = await this.keys.revoke(keyId, this.clock.now())
    this.cache.forgetKey(keyId)
    if (revoked && this.changes) {
      this.changes.publish({ kind: 'key', keyId })
      await this.changes.flush()
    } else if (revoked) this.watch.end(keyId, 'revoked')
    return revoked
  }
}
