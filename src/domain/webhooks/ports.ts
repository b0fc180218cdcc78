import type { LeaseClaim } from '../leases.js'
import type { Slice } from '../pagination.js'
import type { TxBound } from '../ports.js'
import type {
  AttemptRecord,
  DeliveryRecord,
  NewDelivery,
  NewWebhook,
  StoredSecret,
  WebhookRecord,
} from './types.js'

export interface WebhookRepository extends TxBound<WebhookRepository> {
  insert(w: NewWebhook): Promise<WebhookRecord>
  get(workspaceId: string, id: string): Promise<WebhookRecord | undefined>
  /** The subscriptions of these (workspace, id) pairs that exist, by id, in one read. */
  getMany(keys: readonly { workspaceId: string; id: string }[]): Promise<Map<string, WebhookRecord>>
  list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<WebhookRecord>>
  /** Active subscriptions of these workspaces, for fanning events out. */
  activeIn(workspaceIds: readonly string[]): Promise<WebhookRecord[]>
  /** The smallest `after_event_seq` of any active subscription, or null when there is none. */
  minAfterSeq(): Promise<number | null>
  setSecrets(id: string, secrets: StoredSecret[], rotatedAt: number): Promise<void>
  /** Whether it was live (and is deleted now): a second delete at once changes nothing. */
  markDeleted(id: string, now: number): Promise<boolean>
  cursor(name: string): Promise<number>
  /** Moves the fan-out cursor forward only, so two replicas fanning out at once never move it back. */
  advanceCursor(name: string, seq: number): Promise<void>
}

export interface DeliveryRepository extends TxBound<DeliveryRepository> {
  /** Creates the rows whose (subscription, event) pair has none yet; the number created. */
  insertMany(rows: readonly NewDelivery[]): Promise<number>
  get(webhookId: string, id: string): Promise<DeliveryRecord | undefined>
  list(webhookId: string, afterSeq: number, limit: number): Promise<Slice<DeliveryRecord>>
  /**
   * Takes the lease on the oldest due row of each subscription that has one (skipping `busy` subscriptions), at
   * most `limit` subscriptions, the longest waiting first; a row another worker took first is left out. `claim` says
   * whether the row was free or held by another owner whose lease had lapsed (`taken-over`).
   */
  claimDue(
    now: number,
    limit: number,
    busy: readonly string[],
    owner: string,
    leaseUntil: number,
  ): Promise<{ row: DeliveryRecord; claim: LeaseClaim }[]>
  /**
   * Records the outcomes of attempts `owner` made, all in one statement; the ids recorded. A row whose lease was
   * lost (lapsed and taken over) is left as it is, so outcomes never cross.
   */
  recordAttempts(owner: string, attempts: readonly AttemptRecord[]): Promise<Set<string>>
  /**
   * Whether outcomes are best gathered into one `recordAttempts` call per turn of the event loop (each call a round
   * trip and a commit of its own); false when the store already commits a turn's writes together.
   */
  readonly gathersOutcomes: boolean
  /** Starts a fresh round of attempts (manual redeliver); refused while an attempt holds the lease. */
  requeue(id: string, now: number): Promise<boolean>
  /** Drops what a deleted subscription still had to send. */
  dropPending(webhookId: string): Promise<number>
  /** Gives back every lease an owner holds (a stopping dispatcher); the rows stay pending with their attempts. */
  releaseLeases(owner: string, now: number): Promise<number>
}
