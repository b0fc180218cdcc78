import { ApiError } from '../errors.js'
import type { Workspace } from '../identity.js'

/**
 * The two fixed windows of spec §8: a short burst window on top of the sustained hourly one. The burst window's
 * length is a workspace setting (`Workspace.burstWindowSeconds`); this is its default.
 */
export const DEFAULT_BURST_WINDOW_SECONDS = 10
export const HOURLY_WINDOW_SECONDS = 3600

export interface WindowPolicy {
  name: 'burst' | 'hourly'
  quota: number
  windowSeconds: number
}

export interface WindowState extends WindowPolicy {
  windowStart: number
  used: number
  remaining: number
  resetSeconds: number
}

/** Policies by workspace record: a record is not changed in place (a settings change makes a new one). */
const policiesByWorkspace = new WeakMap<Workspace, readonly WindowPolicy[]>()

export function policiesFor(workspace: Workspace): readonly WindowPolicy[] {
  let policies = policiesByWorkspace.get(workspace)
  // Stryker disable next-line ConditionalExpression: a speed path: made again, the policies are the same (the header's cache below keys on them).
  if (!policies) {
    policies = Object.freeze([
      Object.freeze({
        name: 'burst',
        quota: workspace.burstLimit,
        windowSeconds: workspace.burstWindowSeconds,
      }),
      Object.freeze({ name: 'hourly', quota: workspace.limitPerHour, windowSeconds: HOURLY_WINDOW_SECONDS }),
    ] as const)
    policiesByWorkspace.set(workspace, policies)
  }
  return policies
}

/** Windows are aligned to the epoch so every replica agrees on where one starts. */
export function windowStart(now: number, windowSeconds: number): number {
  const ms = windowSeconds * 1000
  return Math.floor(now / ms) * ms
}

/**
 * Fields are listed rather than spread from `policy`: on Node 20, an object spread followed by more properties
 * takes V8's slow path, and this runs on every request (bench:http's cached GET).
 */
export function stateOf(policy: WindowPolicy, now: number, used: number): WindowState {
  const start = windowStart(now, policy.windowSeconds)
  return {
    name: policy.name,
    quota: policy.quota,
    windowSeconds: policy.windowSeconds,
    windowStart: start,
    used,
    remaining: Math.max(0, policy.quota - used),
    resetSeconds: Math.max(1, Math.ceil((start + policy.windowSeconds * 1000 - now) / 1000)),
  }
}

/** `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers): one structured-field item per policy. */
const policyHeaders = new WeakMap<readonly WindowPolicy[], string>()

/** Made once per policies array (policiesFor hands out one array per workspace record). */
export function rateLimitPolicyHeader(policies: readonly WindowPolicy[]): string {
  let header = policyHeaders.get(policies)
  // Stryker disable next-line ConditionalExpression: a speed path: made again, the header is the same text.
  if (header === undefined) {
    header = policies.map((p) => `"${p.name}";q=${p.quota};w=${p.windowSeconds}`).join(', ')
    policyHeaders.set(policies, header)
  }
  return header
}

/** `RateLimit`: remaining quota and seconds to reset, per policy. */
export function rateLimitHeader(states: WindowState[]): string {
  return states.map((s) => `"${s.name}";r=${s.remaining};t=${s.resetSeconds}`).join(', ')
}

/** 429 for the window that refused the request (REST and socket ingestion alike). */
export function rateLimited(w: WindowState): ApiError {
  return new ApiError(
    'rate_limited',
    `The workspace used its ${w.quota} requests of the ${w.name} window; retry in ${w.resetSeconds} s`,
    {
      window: w.name,
      limit: w.quota,
      window_seconds: w.windowSeconds,
      reset_at: new Date(w.windowStart + w.windowSeconds * 1000).toISOString(),
      retry_after_seconds: w.resetSeconds,
    },
    { 'Retry-After': String(w.resetSeconds) },
  )
}
