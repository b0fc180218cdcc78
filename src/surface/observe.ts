/**
 * The surface layer's observation hook: every transport reports here once per request or socket, so metrics and
 * the request log (operational concerns) have one home and no transport grows its own.
 */

/** One finished HTTP request (REST, GraphQL over HTTP, the SSE trace). */
export interface RequestObservation {
  method: string
  /**
   * The route template the request was for, as the contract writes it (`/v1/runs/{run_id}`), also when auth or a
   * limit refused it first; `unmatched` when no route matched. Never the raw path: bounded cardinality.
   */
  route: string
  status: number
  durationMs: number
  requestId: string
  /** The caller, once authentication ran (absent on public routes and refused credentials). */
  workspaceId: string | undefined
  keyId: string | undefined
  /** The spec §7 code of an error answer (a closed vocabulary), absent on success. */
  errorCode: string | undefined
}

/** The route of a request no route matched: raw paths never become label values. */
export const UNMATCHED_ROUTE = 'unmatched'

export type SocketTransport = 'stream' | 'graphql-ws'

export interface SurfaceObserver {
  /** A request entered (before any other middleware ran): requests in flight. Must not throw and must not wait. */
  requestStarted(): void
  /** Called once per HTTP request, after its answer is ready. Must not throw and must not wait. */
  request(observation: RequestObservation): void
  /** A WebSocket opened (after authentication) or closed on one of the socket transports. */
  socket(transport: SocketTransport, event: 'open' | 'close'): void
}

/** The default: nothing observed, and the HTTP app then mounts no observation middleware at all. */
export const NO_OBSERVER: SurfaceObserver = {
  requestStarted() {},
  request() {},
  socket() {},
}
