/**
 * Everything the domain needs from outside, declared here and implemented elsewhere: the database handle
 * (src/store/db.ts), the repositories (src/store/repos/), the event log and the runs feature. The composition
 * root (src/services.ts) wires them; no domain module builds its own.
 */
import type { AgentRecord } from './agents/types.js'
import type { EventRow } from './events/types.js'
import type { ApiKeyRecord, Workspace } from './identity.js'
import type { BatchRow, StoredRecordRow } from './ingestion/types.js'
import type { ClaimResult, CounterWindow, StoredAnswer, StoredResponse } from './limits/types.js'
import type { Slice } from './pagination.js'
import type { FrameRecord, Outcome, RunRecord, RunStatus } from './runs/types.js'
import type { TaskRecord } from './tasks/types.js'
import type { ToolRecord } from './tools/types.js'
import type {
  AttemptOutcome,
  DeliveryRecord,
  NewDelivery,
  NewWebhook,
  StoredSecret,
  WebhookRecord,
} from './webhooks/types.js'

// --- the database handle -------------------------------------------------------------------------------------

/**
 * A bound value. Arrays are PostgreSQL's (`unnest($1::text[])`: a whole batch in one statement); the embedded
 * store's driver refuses them, so SQL that binds one runs on PostgreSQL only.
 */
export type SqlValue =
  | string
  | number
  | bigint
  | boolean
  | null
  | undefined
  | Uint8Array
  | readonly string[]
  | readonly number[]
export type Row = Record<string, unknown>

/** A connection or an open transaction. Only repositories send SQL through it; services just hand it on. */
export interface Queryable {
  /** All rows. */
  query<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]>
  /** First row or undefined. */
  one<T extends Row = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>
  /** Number of rows changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>
  /** Runs a multi-statement script (migrations); no parameters. */
  exec(script: string): Promise<void>
}

export type Dialect = 'sqlite' | 'postgres'

export interface Db extends Queryable {
  readonly dialect: Dialect
  /**
   * Runs fn in one transaction; commits when it resolves, rolls back when it throws. Inside a unit of work it joins
   * the unit's transaction: its failure then fails the unit.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /**
   * Runs fn as one unit of work: every statement and transaction of its async context, whatever Queryable it goes
   * through, joins one store transaction, committed when fn resolves and rolled back when it throws; it resolves
   * after the COMMIT. A request with an Idempotency-Key runs in one, so its effect and its answer commit together.
   */
  unitOfWork<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /**
   * Runs fn once the enclosing unit of work committed, outside its context (dropped if it rolls back); at once
   * outside a unit. Work that outlives a write (wake-ups, change notifications) starts through here.
   */
  afterCommit(fn: () => void): void
  /** Whether the caller is inside an open unit of work: what it reads may not be committed yet (caches stay out). */
  inUnitOfWork(): boolean
  /**
   * A unit of work that sends nothing before its commit (PostgreSQL only; absent elsewhere): its held-back writes
   * then go out as one atomic statement, on a connection other units' commits share, so a unit costs one round trip
   * whatever else is in flight. For work whose every statement is a write held back until the commit (the store's
   * CommitTail) and independent of the others (they may run as one statement, on one snapshot: none may depend on
   * another's effect); a statement that needs an answer fails the unit. A refused commit throws
   * DeferredCommitRefused, whose `resume` hands the unit's writes on to another unit.
   */
  deferredUnitOfWork?<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  close(): Promise<void>
}

/**
 * A deferred unit of work's COMMIT was refused (`cause`, the store's error): nothing of it was kept. Called inside
 * another unit of work of the same store, `resume` gives that unit the refused one's writes and what waited for
 * its commit, so the work commits there without being done again.
 */
export class DeferredCommitRefused extends Error {
  constructor(
    cause: unknown,
    readonly resume: () => void,
  ) {
    super('The deferred unit of work was refused at its commit', { cause })
  }
}

// --- repositories: each is bound to the Db; `in(tx)` is the same repository inside a transaction ------------------

export interface TxBound<R> {
  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): R
}

export interface WorkspaceRepository extends TxBound<WorkspaceRepository> {
  byId(id: string): Promise<Workspace | undefined>
  byName(name: string): Promise<Workspace | undefined>
  /** Inserts unless the name exists (two CLI calls may race); returns the stored workspace either way. */
  insertIfAbsent(ws: Workspace): Promise<Workspace>
  update(ws: Workspace): Promise<void>
}

export interface KeyRepository extends TxBound<KeyRepository> {
  insert(key: ApiKeyRecord): Promise<void>
  byId(id: string): Promise<ApiKeyRecord | undefined>
  listByWorkspace(workspaceId: string): Promise<ApiKeyRecord[]>
  revoke(id: string, at: number): Promise<boolean>
}

export interface AgentRepository extends TxBound<AgentRepository> {
  /**
   * Stores a new agent. Nothing is read back (its `seq` is the store's, for paging): on PostgreSQL, inside a
   * transaction, the insert goes out with the COMMIT and costs no round trip of its own.
   */
  insert(a: Omit<AgentRecord, 'seq'>): Promise<void>
  /** Only live agents of the workspace: a deleted or foreign agent is indistinguishable from a missing one. */
  get(workspaceId: string, id: string): Promise<AgentRecord | undefined>
  /** Live agents of the workspace among `ids`, in one query (batched loading); missing ids are absent. */
  getMany(workspaceId: string, ids: readonly string[]): Promise<AgentRecord[]>
  list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<AgentRecord>>
  markDeleted(workspaceId: string, id: string, at: number): Promise<boolean>
}

export interface ToolRepository extends TxBound<ToolRepository> {
  /** Returns undefined when an active tool of that name exists (the unique index on active names decides). */
  insertIfNameFree(t: Omit<ToolRecord, 'seq'>): Promise<ToolRecord | undefined>
  get(workspaceId: string, id: string): Promise<ToolRecord | undefined>
  activeByName(workspaceId: string, name: string): Promise<ToolRecord | undefined>
  list(
    workspaceId: string,
    includeRetired: boolean,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<ToolRecord>>
  retire(workspaceId: string, id: string, at: number): Promise<boolean>
}

export interface TaskRepository extends TxBound<TaskRepository> {
  insert(t: Omit<TaskRecord, 'seq'>): Promise<TaskRecord>
  get(workspaceId: string, id: string): Promise<TaskRecord | undefined>
  /** Attaches the task's run unless the run got there first (`followTask`): a later status is never undone. */
  attachRun(id: string, runId: string, status: RunStatus, at: number): Promise<void>
}

/**
 * How a lease was got: `claimed` when the row was free or already ours (a renewal), `taken-over` when another
 * owner held it and let it lapse (a replica that died or stalled).
 */
export type LeaseClaim = 'claimed' | 'taken-over'

export interface RunRepository extends TxBound<RunRepository> {
  /**
   * The repository in a transaction that reads none of the runs it writes once it has written them: save,
   * appendFrame and followTask may then be held back and sent with the COMMIT (one write instead of one each).
   */
  writingAtCommit(tx: Queryable): RunRepository
  insert(r: Omit<RunRecord, 'seq'>): Promise<RunRecord>
  /** Writes every mutable field back; callers hold the row inside a transaction. A finished run drops its lease. */
  save(r: RunRecord): Promise<void>
  get(workspaceId: string, id: string): Promise<RunRecord | undefined>
  /**
   * What `get` would answer, when it can be answered from memory without waiting (a cached run this process is
   * the sole writer of); undefined when `get` must be asked.
   */
  getNow?(workspaceId: string, id: string): RunRecord | undefined
  /** Reads the row for update: on PostgreSQL the row lock serialises controls against the executor. */
  lock(id: string, dialect: Dialect): Promise<RunRecord | undefined>
  listByAgent(
    workspaceId: string,
    agentId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<RunRecord>>
  activeIdsByAgent(workspaceId: string, agentId: string): Promise<string[]>
  /** Non-terminal runs per agent; agents without one are absent from the map. */
  countActiveByAgents(workspaceId: string, agentIds: readonly string[]): Promise<Map<string, number>>
  /**
   * Claims up to `limit` runs the scheduler may advance (higher priority first, then age; leases live elsewhere
   * are skipped) with one statement, answering their ids in that order; each run goes to one owner. A run `owner`
   * already holds may be among them (its lease renewed). `takenOver`: how many of them another owner had held
   * and let lapse (a replica that died or stalled).
   */
  claimNext(
    owner: string,
    now: number,
    until: number,
    limit: number,
  ): Promise<{ ids: string[]; takenOver: number }>
  /**
   * Takes (or renews) the run's lease: `taken-over` when another owner's lease had lapsed (a dead or stalled
   * replica), undefined when another owner holds a live one.
   */
  claim(id: string, owner: string, now: number, until: number): Promise<LeaseClaim | undefined>
  release(id: string, owner: string): Promise<void>
  appendFrame(runId: string, f: FrameRecord): Promise<void>
  frames(runId: string, afterSeq: number, limit: number): Promise<Slice<FrameRecord>>
  /** The run's task takes the run's status (and the run's id, if the task service has not attached it yet). */
  followTask(
    taskId: string,
    runId: string,
    status: RunStatus,
    outcome: Outcome | null,
    at: number,
  ): Promise<void>
}

export interface EventRepository extends TxBound<EventRepository> {
  /**
   * Appends one event, written when its transaction commits; sequence order equals commit order (see the store's
   * implementation).
   */
  append(dialect: Dialect, e: Omit<EventRow, 'seq'>): Promise<void>
  after(seq: number, limit: number): Promise<EventRow[]>
  afterInWorkspace(workspaceId: string, seq: number, limit: number): Promise<EventRow[]>
  lastSeq(): Promise<number>
}

export interface RecordRepository extends TxBound<RecordRepository> {
  /** Creates the connector on first use and locks it until the transaction ends; returns its last seq. */
  lockConnector(workspaceId: string, connectorId: string, now: number): Promise<number>
  /**
   * Stores a batch's records unless the connector already holds some of their ids, and answers those ids (usually
   * none). When it answers any, which of the records were stored is the store's choice: the caller removes them
   * (`deleteRecords`) and stores the batch again without the taken ids. Runs under the connector's lock.
   */
  insertNewRecords(records: readonly StoredRecordRow[]): Promise<Set<string>>
  /** Removes the connector's records with seq in [fromSeq, toSeq] (a batch stored in its own transaction). */
  deleteRecords(workspaceId: string, connectorId: string, fromSeq: number, toSeq: number): Promise<void>
  /**
   * The writes of a batch whose results nobody reads: a store may send them with the transaction's COMMIT, and a
   * failure then fails the transaction.
   */
  setLastSeq(workspaceId: string, connectorId: string, lastSeq: number, now: number): Promise<void>
  insertBatch(b: BatchRow): Promise<void>
  insertRecords(records: readonly StoredRecordRow[]): Promise<void>
  /** The connector's last seq, or undefined when the workspace has never ingested into it. */
  connectorLastSeq(workspaceId: string, connectorId: string): Promise<number | undefined>
  /** Records with seq > afterSeq, oldest first. */
  after(
    workspaceId: string,
    connectorId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<StoredRecordRow>>
  /** Every leaf hash of the given batches, in leaf order (to build inclusion proofs). */
  batchLeaves(batchIds: readonly string[]): Promise<Map<string, string[]>>
}

export interface WebhookRepository extends TxBound<WebhookRepository> {
  insert(w: NewWebhook): Promise<WebhookRecord>
  get(workspaceId: string, id: string): Promise<WebhookRecord | undefined>
  list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<WebhookRecord>>
  /** Active subscriptions of these workspaces, for fanning events out. */
  activeIn(workspaceIds: readonly string[]): Promise<WebhookRecord[]>
  /** The smallest `after_event_seq` of any active subscription, or null when there is none. */
  minAfterSeq(): Promise<number | null>
  setSecrets(id: string, secrets: StoredSecret[], rotatedAt: number): Promise<void>
  markDeleted(id: string, now: number): Promise<void>
  cursor(name: string): Promise<number>
  /** Moves the fan-out cursor forward only, so two replicas fanning out at once never move it back. */
  advanceCursor(name: string, seq: number): Promise<void>
}

export interface DeliveryRepository extends TxBound<DeliveryRepository> {
  /** Creates the row unless this (subscription, event) pair already has one; true when it was created. */
  insert(d: NewDelivery): Promise<boolean>
  get(webhookId: string, id: string): Promise<DeliveryRecord | undefined>
  byId(id: string): Promise<DeliveryRecord | undefined>
  list(webhookId: string, afterSeq: number, limit: number): Promise<Slice<DeliveryRecord>>
  /** The oldest due row of each subscription that has one (skipping `busy` subscriptions). */
  due(now: number, limit: number, busy?: readonly string[]): Promise<{ id: string; webhookId: string }[]>
  /**
   * Takes the lease on a due row; undefined when another worker got there first. `claim` says whether the row was
   * free or held by another owner whose lease had lapsed (`taken-over`).
   */
  claim(
    id: string,
    owner: string,
    now: number,
    leaseUntil: number,
  ): Promise<{ row: DeliveryRecord; claim: LeaseClaim } | undefined>
  /** Records an attempt; a no-op when the lease was lost, so outcomes never cross. */
  recordAttempt(
    id: string,
    owner: string,
    attemptsBefore: number,
    outcome: AttemptOutcome,
    now: number,
  ): Promise<boolean>
  /** Starts a fresh round of attempts (manual redeliver); refused while an attempt holds the lease. */
  requeue(id: string, now: number): Promise<boolean>
  /** Drops what a deleted subscription still had to send. */
  dropPending(webhookId: string): Promise<number>
  /** Gives back every lease an owner holds (a stopping dispatcher); the rows stay pending with their attempts. */
  releaseLeases(owner: string, now: number): Promise<number>
}

/**
 * Idempotency records. Not transaction-bound: on the embedded store a claim in progress may live in memory
 * (the server is the store's only writer), on PostgreSQL it is a row every replica sees.
 */
/**
 * Idempotency keys (docs/design.md "Idempotency"). A key has no state between "unclaimed" and "answered" in the
 * store: its request runs in a unit of work whose claim dies with it, and its answer commits with its effect.
 */
export interface IdempotencyRepository {
  /**
   * Inside the request's unit of work, before its work: the key's stored answer (a replay), or a claim held until
   * the unit ends (PostgreSQL: a transaction-scoped advisory lock, so a dead server's claim ends with its
   * connection; SQLite: the unit itself, which excludes every other writer), or in progress when another unit
   * holds it. An expired answer is deleted in the unit.
   */
  claim(
    tx: Queryable,
    workspaceId: string,
    key: string,
    fingerprint: string,
    now: number,
  ): Promise<ClaimResult>
  /** In the same unit as the work: the answer, committed with the effect (and failing the commit if one exists). */
  answer(tx: Queryable, entry: StoredAnswer): Promise<void>
  /**
   * In a deferred unit (Db.deferredUnitOfWork), after the work: the answer as the claim itself, sent ahead of the
   * work's statements. It fails the commit when another request holds the key or the key has a row (an answer,
   * expired or not); `keyTaken` tells that failure from others.
   */
  answerAsClaim(tx: Queryable, entry: StoredAnswer): void
  /** Whether a deferred unit's refused commit (DeferredCommitRefused's cause) was refused by `answerAsClaim`. */
  keyTaken(cause: unknown): boolean
  /**
   * Outside any unit, after the work rolled back: stores a refusal (4xx) unless the key was answered meanwhile.
   * Returns what the key holds then: this answer (the very `entry.response`), or the one that got there first.
   */
  answerAlone(entry: StoredAnswer, now: number): Promise<{ fingerprint: string; response: StoredResponse }>
  /** The key's unexpired answer, if it has one. */
  stored(
    workspaceId: string,
    key: string,
    now: number,
  ): Promise<{ fingerprint: string; response: StoredResponse } | undefined>
  purgeExpired(now: number): Promise<number>
}

/**
 * Rate counters. Counts one request in each window in order, and stops counting after the first window it
 * overflows (so a request the burst window refuses does not burn the hour). Answers each window's count:
 * including this request where it was counted, the current figure where it was not.
 */
export interface RateCounterRepository {
  consume(workspaceId: string, windows: readonly CounterWindow[]): Promise<number[]>
  /**
   * `consume` without waiting, where counts live in memory: undefined (nothing counted) when a window must be read
   * from the store first, or when the counts are not this process's to keep.
   */
  consumeNow?(workspaceId: string, windows: readonly CounterWindow[]): number[] | undefined
  /** Persists counts still held in memory (no-op where every count is already in the store). */
  flush(now: number): Promise<void>
  purgeBefore(windowStart: number): Promise<number>
}

/** Every repository, built once on one Db by the store (`createRepositories`). */
export interface Repositories {
  workspaces: WorkspaceRepository
  keys: KeyRepository
  agents: AgentRepository
  tools: ToolRepository
  tasks: TaskRepository
  runs: RunRepository
  events: EventRepository
  records: RecordRepository
  webhooks: WebhookRepository
  deliveries: DeliveryRepository
  idempotency: IdempotencyRepository
  rateCounters: RateCounterRepository
}

// --- features the spine calls without importing them ----------------------------------------------------------

/** What agents and tasks need from runs; RunService implements it. */
export interface RunsPort {
  /** Cancels every run of the agent that is not terminal (agent deletion). */
  terminateAgentRuns(workspaceId: string, agentId: string): Promise<void>
  /** Starts the run that carries a newly assigned task; returns its id and status. */
  startTaskRun(task: TaskRunRequest): Promise<{ runId: string; status: RunStatus }>
}

export interface TaskRunRequest {
  workspaceId: string
  taskId: string
  agentId: string
  description: string
  dataSource: string | null
  priority: number
  /** The caller's key, whose scopes the policy gate checks tool bindings against. */
  caller: { keyId: string; identity: string; scopes: string[] }
}

export interface DomainEvent {
  workspaceId: string
  kind: string
  /** The resource the event is about (run, agent, task, tool, connector). */
  subjectId: string
  data: Record<string, unknown>
}

export interface EventsPort {
  /** Appends inside the caller's transaction, so the event exists exactly when the change does. */
  append(tx: Queryable, event: DomainEvent): Promise<void>
  /** Wakes consumers after the transaction committed. */
  notify(): void
}

// --- outbound HTTP -------------------------------------------------------------------------------------------

/** One POST the domain sends out (a webhook delivery, an `http` tool call). */
export interface OutboundPost {
  url: string
  headers: Record<string, string>
  body: string
  /** The whole attempt (connect, headers, body) must fit in this many ms. */
  timeoutMs: number
  /** Ends the attempt early (server shutdown). */
  signal?: AbortSignal
  /** Reads at most this much of the answer's body; the rest is discarded and `truncated` says so. */
  maxAnswerBytes: number
}

export type OutboundFailure = 'invalid_url' | 'private_address' | 'timeout' | 'aborted' | 'unreachable'

/** What came back: an answer with any status (redirects are never followed), or why there was none. */
export type OutboundAnswer =
  | {
      ok: true
      status: number
      body: string
      truncated: boolean
      /** The answer's headers, names in lower case (a repeated header's values joined with ", "). */
      headers?: Record<string, string>
    }
  | { ok: false; failure: OutboundFailure; message: string }

/**
 * The one way out of the server (src/outbound/http.ts). Unless the operator allows private targets, it connects
 * only to public addresses, checked after DNS resolution on the address actually connected to.
 */
export interface OutboundHttp {
  post(request: OutboundPost): Promise<OutboundAnswer>
  /** Why a URL given at registration can never be called (a literal private address, `localhost`), or null. */
  refusal(url: URL): string | null
}
