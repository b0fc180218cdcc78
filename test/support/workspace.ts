import type { Workspace } from '../../src/domain/identity.js'
import { DEFAULT_BURST_WINDOW_SECONDS } from '../../src/domain/limits/rate-limit.js'

/**
 * A workspace record for tests that build services or middleware without a store: named after its id, on the
 * enterprise tier's limits (1,000 an hour, bursts of 20 in the default 10 s window) unless `settings` says otherwise.
 */
export function workspaceRecord(id: string, settings: Partial<Omit<Workspace, 'id'>> = {}): Workspace {
  return {
    id,
    name: id,
    tier: 'enterprise',
    limitPerHour: 1000,
    burstLimit: 20,
    burstWindowSeconds: DEFAULT_BURST_WINDOW_SECONDS,
    policyClasses: [],
    features: [],
    createdAt: 0,
    ...settings,
  }
}
