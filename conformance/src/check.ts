/** What a check is and what it may use while it runs. */
import type { SuiteConfig } from './config.js'
import type { Contract, ContractViolation } from './contract.js'
import type { CoverageRecorder } from './coverage.js'
import type { Fixtures } from './fixtures.js'
import type { HttpClient, HttpResponse } from './http.js'
import type { WebhookReceiver } from './receiver.js'
import type { Exchange, Level } from './types.js'

export type TokenRole =
  | 'primary'
  | 'secondWorkspace'
  | 'narrowScope'
  | 'otherScope'
  | 'runsOnly'
  | 'rateLimited'
  | 'rateLimitedPeer'
  | 'expired'
  | 'revoked'
  | 'revocable'
  | 'quotaLimited'
  | 'standardTier'
  | 'proTier'

export interface Check {
  /** Stable id, `family.what-is-checked`. */
  id: string
  title: string
  level: Level
  /** The numbered spec statements (`S5.2`, see statements.ts) the check verifies. */
  clauses: string[]
  /**
   * The check mostly waits on the deployment's clock (a paused run's window, a negative wait): the runner starts it
   * and goes on with the next checks; it has finished before the sweep checks. Only for checks whose outcome cannot
   * depend on what other checks do meanwhile.
   */
  overlap?: boolean
  /**
   * Checks of one lane run one after another, in their order, alongside the rest of the run (as `overlap` does):
   * for checks that share a resource no other check touches (the small-limit workspace), whose waits on it would
   * otherwise hold the run. A check's time limit and duration count from its own start, not its wait in the lane.
   */
  lane?: string
  /**
   * The identities the check cannot run without, when it asks for them in a helper rather than in its own code
   * (`ctx.as(role)` there is found by --plan by itself, src/plan.ts).
   */
  needs?: TokenRole[]
  run(ctx: CheckContext): Promise<void>
}

/** Every exchange of the run, for the sweep checks at the end (envelopes, timestamps, headers, contract). */
export interface SeenExchange {
  checkId: string
  exchange: Exchange
  response: HttpResponse
  /** Whether the token sent was the primary/second/narrow one (authenticated requests). */
  authenticated: boolean
  /**
   * When the answer arrived (`performance.now()`); less `exchange.durationMs`, when the request was sent. Two
   * readings are in a known order only when the one was answered before the other was sent.
   */
  answeredAt: number
}

/** A WebSocket a check opened (a `ws` WebSocket): what the runner needs to close it and to tell whether it is closing. */
export interface OpenedSocket {
  /** 0 connecting, 1 open, 2 closing (its check closed or terminated it), 3 closed. */
  readonly readyState: number
  terminate(): void
  once(event: 'close', listener: () => void): unknown
}

export interface CheckContext {
  config: SuiteConfig
  /** The primary identity. */
  http: HttpClient
  /** Another identity; skips the check when the deployment did not provide that token. */
  as(role: TokenRole): HttpClient
  contract: Contract
  fx: Fixtures
  receiver: WebhookReceiver | undefined
  /** A run-unique name for anything the check creates (so a shared deployment can tell it apart). */
  name(label: string): string
  /**
   * Registers an undo step run at the end of the suite, even when checks fail. It is given the cleanup's own client
   * (the checks' clients send nothing once the checks end), acting as the primary identity: an undo step for what
   * another identity made sends as that one with `http.withToken(token)`.
   */
  cleanup(label: string, undo: (http: HttpClient) => Promise<unknown>): void
  seen: SeenExchange[]
  /** What of the contract the run exercises; checks that open sockets hand them to `watchSocket`. */
  coverage?: CoverageRecorder
  /**
   * Every socket a check opens is handed here: whatever a check leaves open (a failure between opening and its
   * `finally`, a check that outlived its time limit) is closed when the checks end, so nothing keeps the process
   * alive after its verdict. A socket handed in after that is closed at once.
   */
  opened(socket: OpenedSocket): void
  violations: ContractViolation[]
  log(line: string): void
  /**
   * Records that a part of the running check could not run (say which part, why, and the setting that would run
   * it): if nothing else fails, the check ends `partial` with these reasons instead of `pass`.
   */
  partial(reason: string): void
}

export function family(id: string): string {
  return id.split('.')[0] ?? id
}

/** A check of the sweep family: it judges every exchange of the run, so it runs after every other check. */
export function isSweep(check: Pick<Check, 'id'>): boolean {
  return family(check.id) === 'sweep'
}
