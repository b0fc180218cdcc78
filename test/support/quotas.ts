import type { QuotaGate } from '../../src/domain/quotas/service.js'

/** A quota gate that never refuses: for unit tests of a service whose quotas another test judges (test/quotas). */
export const NO_QUOTAS: QuotaGate = {
  take: async () => undefined,
  release: async () => undefined,
}
