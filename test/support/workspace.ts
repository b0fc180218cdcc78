import type { Workspace } from '../../src/domain/identity.js'

/**
 * A workspace record for tests that build services or middleware without a store: named after its id, on the
 * enterprise tier's limits (1,000 an hour, bursts of 20) unless `settings` says otherwise.
 */
export function workspaceRecord(id: string, settings: Partial<Omit<Workspace, 'id'>> = {}): Workspace {
  return {
    id,
    name: id,
    tier: 'enterprise',
    limitPerHour: 1000,
    burstLimit: 20,
    policyClasses: [],
    features: [],
    createdAt: 0,
    ...settings,
  }
}
