import type { Workspace } from '../identity.js'
import type { QuotaName } from './types.js'

/**
 * The bytes a stored Idempotency-Key answer is counted for (`idempotency_bytes`, `idempotency_answer_bytes`): its
 * body and headers as UTF-8, its key, and the fingerprint and row around them.
 */
export function storedAnswerBytes(answer: {
  key: string
  response: { body: string; headers: Record<string, string> }
}): number {
  return (
    Buffer.byteLength(answer.response.body, 'utf8') +
    Buffer.byteLength(JSON.stringify(answer.response.headers), 'utf8') +
    Buffer.byteLength(answer.key, 'utf8') +
    64
  )
}

/** A workspace's bounds on its stored answers, as the store checks them when it keeps one. */
export interface StoredAnswerLimits {
  /** `idempotency_keys`: answers kept at once (expired ones count until they are purged). */
  keys: number
  /** `idempotency_bytes`: their bytes (storedAnswerBytes) in all. */
  bytes: number
}

/** Why the store did not keep an answer: the quota it would have passed, its limit and what is used. */
export interface StoredAnswerRefusal {
  quota: Extract<QuotaName, 'idempotency_keys' | 'idempotency_bytes' | 'idempotency_answer_bytes'>
  limit: number
  used: number
}

/**
 * How a keyed request's answer is bounded (IdempotencyService.once): the workspace whose quotas apply. An answer
 * that passes a quota is refused with quota_exceeded and its work rolled back, so the key never holds an effect it
 * cannot answer for. (A POST that only reads is not keyed at all: src/http/middleware/idempotency.ts.)
 */
export interface AnswerQuota {
  workspace: Workspace
}
