import type { Clock } from '../clock.js'
import type { ApiError, ErrorCode } from '../errors.js'
import { type Db, DeferredCommitRefused } from '../ports.js'
import {
  type AnswerQuota,
  type StoredAnswerLimits,
  type StoredAnswerRefusal,
  storedAnswerBytes,
} from '../quotas/idempotency.js'
import type { QuotaService } from '../quotas/service.js'
import { IDEMPOTENCY_WINDOW_MS } from './key.js'
import type { IdempotencyRepository } from './ports.js'
import type { ClaimResult, StoredAnswer, StoredResponse } from './types.js'

/** What a keyed request's handler produced: the answer, and whether the request failed (its work is undone). */
export interface Handled {
  response: StoredResponse
  failed: boolean
  /** The code of the error a failed request answered with, when it is one of the catalogue's. */
  code?: ErrorCode | undefined
}

/**
 * Refusals a key does not keep, as it keeps no 5xx: they depend on room the client can make (a quota), so a retry
 * with the key once there is room runs the request rather than replaying the refusal.
 */
const UNKEPT_REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['quota_exceeded'])

/**
 * How `once` ended: this request's answer is the key's (`answered`), the key holds another's (`replay`, or
 * `in_progress` while it runs), or the request failed with a server error and the key stays free (`unanswered`).
 */
export type Once = Exclude<ClaimResult, { kind: 'claimed' }> | { kind: 'answered' } | { kind: 'unanswered' }

/** How `once` may run its work. */
export interface OnceOptions {
  /**
   * The work's every statement is a write held back until the commit, independent of the others (it reads nothing
   * in the unit and uses no result; see Db.deferredUnitOfWork): on a store with deferred units, the work then runs
   * before the claim, which goes out with the work's writes as one statement, and an ordinary claim follows only
   * when the key turns out to be taken.
   */
  writesOnly?: boolean
  /**
   * The workspace's quotas on stored answers (src/domain/quotas/idempotency.ts): an answer past one is refused with
   * quota_exceeded and its work rolled back; a refusal (4xx) past one is answered unstored.
   */
  quota: AnswerQuota
}

/** A keyed request as `once` sees it; `now` is when it arrived, the start of its answer's 24 hours. */
interface KeyedRequest {
  workspaceId: string
  key: string
  fingerprint: string
  now: number
}

function answerOf(request: KeyedRequest, response: StoredResponse): StoredAnswer {
  return {
    workspaceId: request.workspaceId,
    key: request.key,
    fingerprint: request.fingerprint,
    response,
    createdAt: request.now,
    expiresAt: request.now + IDEMPOTENCY_WINDOW_MS,
  }
}

/** Rolls a failed request's unit of work back; `once` then decides what the key keeps. */
class RolledBack extends Error {}

/** Idempotency-Key requests (docs/design.md "Idempotency"): each key's work runs at most once, its answer replayed. */
export class IdempotencyService {
  constructor(
    /** Where a keyed request's unit of work runs. */
    private readonly db: Db,
    private readonly idempotency: IdempotencyRepository,
    private readonly clock: Clock,
    /** The quotas `OnceOptions.quota` is read against: each workspace's limits, and the refusal past one. */
    private readonly quotas: Pick<QuotaService, 'limitOf' | 'refuse'>,
  ) {}

  /**
   * Runs `handle` at most once for the key (docs/design.md "Idempotency"). The claim, the work `handle` does and its
   * answer are one unit of work: the key is either unclaimed or answered with the committed effect, whatever
   * crashes when. A failed request rolls back whole; its refusal (4xx) is then stored on its own, and a server
   * error (5xx) is not an answer: the key stays free for a retry.
   */
  async once(
    workspaceId: string,
    key: string,
    fingerprint: string,
    handle: () => Promise<Handled>,
    options: OnceOptions,
  ): Promise<Once> {
    const request: KeyedRequest = { workspaceId, key, fingerprint, now: this.clock.now() }
    const { quota } = options
    // A speed path (one round trip) on a store with deferred units, PostgreSQL only: its mutants are judged by the
    // section's run on PostgreSQL (conformance:stryker --postgres URL).
    // Stryker disable next-line ConditionalExpression,BooleanLiteral: equivalent, each variant sends the request down the ordinary claim (the same answers, a round trip more).
    if (!options.writesOnly || !this.db.deferredUnitOfWork) return this.claimThenWork(request, handle, quota)
    // The work first and its answer as the claim, in one deferred unit: one round trip when the key is fresh. The
    // answer's counts go with it; past a quota the commit fails with the refusal.
    let handled: Handled | undefined
    try {
      await this.db.deferredUnitOfWork(async (tx) => {
        handled = await handle()
        if (handled.failed) throw new RolledBack()
        const answer = answerOf(request, handled.response)
        const refusal =
          this.oversize(answer, quota) ??
          (await this.idempotency.answerAsClaim(tx, answer, this.limits(quota), (r) => this.refusal(r)))
        if (refusal) throw this.refusal(refusal)
      })
      return { kind: 'answered' }
    } catch (err) {
      const settled = handled as Handled | undefined
      // A refusal (4xx) is stored only by a request that claimed the key: without the claim it could take the key
      // from a request still running with it. The ordinary claim answers in progress then, or stores it.
      if (settled?.failed && settled.response.status < 500)
        return this.claimThenWork(request, async () => settled, quota)
      if (err instanceof DeferredCommitRefused && settled && this.idempotency.keyTaken(err.cause)) {
        // Another request holds the key or it has a row (an answer, or an expired one): the ordinary claim tells
        // which. Should the key be this request's after all, the refused unit's writes commit in the claim's unit.
        return this.claimThenWork(
          request,
          async () => {
            err.resume()
            return settled
          },
          quota,
        )
      }
      return this.afterFailure(
        request,
        err instanceof DeferredCommitRefused ? err.cause : err,
        settled,
        quota,
      )
    }
  }

  /** `once` with the claim first, in the unit of work the work then runs in. */
  private async claimThenWork(
    request: KeyedRequest,
    handle: () => Promise<Handled>,
    quota: AnswerQuota,
  ): Promise<Once> {
    const { workspaceId, key, fingerprint, now } = request
    let handled: Handled | undefined
    try {
      return await this.db.unitOfWork(async (tx): Promise<Once> => {
        // The answer's counts go with the commit where the store can: so do those of an expired answer the claim removes.
        const claim = await this.idempotency.claim(tx, workspaceId, key, fingerprint, now)
        if (claim.kind !== 'claimed') return claim
        handled = await handle()
        if (handled.failed) throw new RolledBack()
        const answer = answerOf(request, handled.response)
        // The counts may go with the commit, whose failure is then the refusal (caught below).
        const refusal =
          this.oversize(answer, quota) ??
          (await this.idempotency.answer(tx, answer, this.limits(quota), (r) => this.refusal(r)))
        if (refusal) throw this.refusal(refusal)
        return { kind: 'answered' }
      })
    } catch (err) {
      return this.afterFailure(request, err, handled as Handled | undefined, quota)
    }
  }

  /** The workspace's bounds on its stored answers. */
  private limits(quota: AnswerQuota): StoredAnswerLimits {
    return {
      keys: this.quotas.limitOf(quota.workspace, 'idempotency_keys'),
      bytes: this.quotas.limitOf(quota.workspace, 'idempotency_bytes'),
    }
  }

  /** `idempotency_answer_bytes`: an answer larger than this is not stored at all. */
  private oversize(answer: StoredAnswer, quota: AnswerQuota): StoredAnswerRefusal | undefined {
    const limit = this.quotas.limitOf(quota.workspace, 'idempotency_answer_bytes')
    const bytes = storedAnswerBytes(answer)
    return bytes > limit ? { quota: 'idempotency_answer_bytes', limit, used: bytes } : undefined
  }

  /** 403 quota_exceeded naming the quota the answer would pass (counted in the metrics). */
  private refusal(refusal: StoredAnswerRefusal): ApiError {
    return this.quotas.refuse(refusal.quota, refusal.limit, refusal.used)
  }

  /** What the key holds once a keyed request's unit of work failed (`err`), after its work (`handled`) or before. */
  private async afterFailure(
    request: KeyedRequest,
    err: unknown,
    handled: Handled | undefined,
    quota: AnswerQuota,
  ): Promise<Once> {
    if (handled?.failed) {
      // Stryker disable next-line EqualityOperator,ObjectLiteral,StringLiteral: reached only by a route failing with a 5xx, which the reference never answers to a request the suite sends.
      if (handled.response.status >= 500) return { kind: 'unanswered' }
      if (handled.code && UNKEPT_REFUSALS.has(handled.code)) return { kind: 'unanswered' }
      const answer = answerOf(request, handled.response)
      if (this.oversize(answer, quota)) return { kind: 'unanswered' }
      const kept = await this.idempotency.answerAlone(answer, request.now, this.limits(quota))
      // Past a quota nothing is stored: the refusal did nothing, so a retry may run it again.
      if (!('response' in kept)) return { kind: 'unanswered' }
      // Another request with the key may have run between the rollback and this write: its answer stands.
      return kept.response === handled.response ? { kind: 'answered' } : { kind: 'replay', ...kept }
    }
    // The commit failed after the work. Another request answered the key meanwhile (the unique key refused a
    // second answer), or the commit's outcome is unknown: what the key holds now is the answer either way. A write
    // whose answer the key could not keep (past a quota) finds nothing: its work is rolled back, and the refusal is
    // the answer, not stored (a stored refusal would take the room it was refused for).
    // Stryker disable all: what another request committed for the key meanwhile (two requests with one key committing at once, or an unknown outcome): no bounded black-box run provokes it deterministically, and the claim serializes idempotency.concurrent-use's race before this; a quota refusal also ends here, and finds nothing stored.
    const stored =
      // Stryker restore next-line LogicalOperator: `||` would replay what a key stored for every request that did its work
      handled && (await this.idempotency.stored(request.workspaceId, request.key, this.clock.now()))
    if (stored) return { kind: 'replay', ...stored }
    // Stryker restore all
    throw err
  }

  /** Drops expired idempotency records. */
  // Stryker disable all: equivalent for a conformance run, expired keys (24 hours) are purged by the maintenance schedule, never within a run.
  async purge(): Promise<{ keys: number }> {
    return { keys: await this.idempotency.purgeExpired(this.clock.now()) }
  }
  // Stryker restore all
}
