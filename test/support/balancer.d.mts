/** Types of balancer.mjs (plain ESM, shared with the mutation run's runner). */
export interface Balancer {
  url: string
  /** Which replica each HTTP request / WebSocket connection went to, in order (replica index). */
  readonly picks: { kind: 'http' | 'ws'; replica: number }[]
  /** Resolves once every replica's /readyz was asked at least once (when readiness is followed). */
  readonly polled: Promise<void>
  close(): Promise<void>
}

export interface BalancerOptions {
  /**
   * Ask each replica's /readyz this often and send nothing to one that is not ready (migrating, its store down,
   * shutting down); 0 (the tests' default) relies on refused connections alone.
   */
  readyzPollMs?: number
}

export declare function startBalancer(
  targets: string[],
  port?: number,
  options?: BalancerOptions,
): Promise<Balancer>
