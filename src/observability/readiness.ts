/**
 * `/readyz`: whether a balancer should send this replica traffic. Distinct from `/healthz` (the process answers):
 * not ready while the store is being migrated, while the store does not answer, and from the first moment of a
 * graceful shutdown, so a balancer drains the replica before it closes its connections.
 */

export type ReadinessPhase = 'starting' | 'migrating' | 'ready' | 'draining'

export interface ReadinessReport {
  ready: boolean
  /** Why not, in a word a balancer's log can show: `migrating`, `store_unreachable`, `shutting_down`, `starting`. */
  status: 'ready' | 'starting' | 'migrating' | 'store_unreachable' | 'shutting_down'
}

/** How long the store may take to answer `SELECT 1` before the replica counts as not ready. */
export const STORE_PROBE_TIMEOUT_MS = 2000

export class Readiness {
  private phase: ReadinessPhase = 'starting'
  private probe: (() => Promise<unknown>) | undefined

  get current(): ReadinessPhase {
    return this.phase
  }

  migrating(): void {
    if (this.phase !== 'draining') this.phase = 'migrating'
  }

  /** Serving: from now on readiness follows the store, which `probe` asks. */
  ready(probe: () => Promise<unknown>): void {
    this.probe = probe
    if (this.phase !== 'draining') this.phase = 'ready'
  }

  /** The first step of a graceful shutdown; never undone. */
  draining(): void {
    this.phase = 'draining'
  }

  private isDraining(): boolean {
    return this.phase === 'draining'
  }

  async check(): Promise<ReadinessReport> {
    if (this.phase === 'draining') return { ready: false, status: 'shutting_down' }
    if (this.phase !== 'ready' || !this.probe)
      return { ready: false, status: this.phase === 'migrating' ? 'migrating' : 'starting' }
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), STORE_PROBE_TIMEOUT_MS)
    })
    try {
      const answered = await Promise.race([this.probe().then(() => true), timedOut])
      if (!answered) return { ready: false, status: 'store_unreachable' }
    } catch {
      return { ready: false, status: 'store_unreachable' }
    } finally {
      clearTimeout(timer)
    }
    // A shutdown that began while the store was asked wins (the await above may have seen one begin).
    return this.isDraining() ? { ready: false, status: 'shutting_down' } : { ready: true, status: 'ready' }
  }
}
