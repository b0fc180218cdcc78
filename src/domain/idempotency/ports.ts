import type { Queryable } from '../ports.js'
import type { StoredAnswerLimits, StoredAnswerRefusal } from '../quotas/idempotency.js'
import type { ClaimResult, StoredAnswer, StoredResponse } from './types.js'

/**
 * Idempotency keys (docs/design.md "Idempotency"). A key has no state between "unclaimed" and "answered" in the
 * store: its request runs in a unit of work whose claim dies with it, and its answer commits with its effect.
 */
export interface IdempotencyRepository {
  /**
   * Inside the request's unit of work, before its work: the key's stored answer (a replay), or a claim held until
   * the unit ends (PostgreSQL: a transaction-scoped advisory lock, so a dead server's claim ends with its
   * connection; SQLite: the unit itself, which excludes every other writer), or in progress when another unit
   * holds it. An expired answer is deleted in the unit, and its counts are given back with the commit where the
   * store can (the unit's answer is counted there too, and nothing reads usage before), not before the work.
   */
  claim(
    tx: Queryable,
    workspaceId: string,
    key: string,
    fingerprint: string,
    now: number,
  ): Promise<ClaimResult>
  /**
   * In the same unit as the work: the answer, committed with the effect (and failing the commit if one exists),
   * counted in its workspace's stored answers within `limits`; or, with nothing written, the quota it would pass.
   * Given `refused`, the count may instead go with the COMMIT where the store can (see
   * QuotaUsageRepository.takeAtCommit): past a quota the commit then fails with the error `refused` words.
   */
  answer(
    tx: Queryable,
    entry: StoredAnswer,
    limits?: StoredAnswerLimits,
    refused?: (refusal: StoredAnswerRefusal) => Error,
  ): Promise<StoredAnswerRefusal | undefined>
  /**
   * In a deferred unit (Db.deferredUnitOfWork), after the work: the answer as the claim itself, sent ahead of the
   * work's statements. It fails the commit when another request holds the key or the key has a row (an answer,
   * expired or not); `keyTaken` tells that failure from others. Given `limits` and `refused`, it is counted within
   * them at the commit (an answer past a quota fails the commit with the error `refused` words), or, with nothing
   * written, answers the quota it could not fit even alone.
   */
  answerAsClaim(
    tx: Queryable,
    entry: StoredAnswer,
    limits?: StoredAnswerLimits,
    refused?: (refusal: StoredAnswerRefusal) => Error,
  ): Promise<StoredAnswerRefusal | undefined>
  /** Whether a deferred unit's refused commit (DeferredCommitRefused's cause) was refused by `answerAsClaim`. */
  keyTaken(cause: unknown): boolean
  /**
   * Outside any unit, after the work rolled back: stores a refusal (4xx) unless the key was answered meanwhile.
   * Returns what the key holds then: this answer (the very `entry.response`), or the one that got there first; or
   * the quota it would pass (`limits`), with nothing stored.
   */
  answerAlone(
    entry: StoredAnswer,
    now: number,
    limits?: StoredAnswerLimits,
  ): Promise<{ fingerprint: string; response: StoredResponse } | StoredAnswerRefusal>
  /** The key's unexpired answer, if it has one. */
  stored(
    workspaceId: string,
    key: string,
    now: number,
  ): Promise<{ fingerprint: string; response: StoredResponse } | undefined>
  purgeExpired(now: number): Promise<number>
}
