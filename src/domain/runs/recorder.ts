import { type ChangeFeed, LocalChangeFeed } from '../changes.js'
import type { Clock } from '../clock.js'
import type { EventsPort } from '../events/ports.js'
import type { Db, Queryable } from '../ports.js'
import type { RunRepository } from './ports.js'
import { NO_RUN_TELEMETRY, type RunTelemetry } from './ports.js'
import { isTerminal } from './state-machine.js'
import type { FrameRecord, RunRecord, RunStatus } from './types.js'

export type FrameInput = Partial<Omit<FrameRecord, 'seq' | 'ts' | 'kind'>> & { kind: FrameRecord['kind'] }

/** What a change to a run may do inside its transaction: edit the run, add frames, add events. */
export interface RunChange {
  run: RunRecord
  now: number
  /** The change's transaction, for reads that must see (and wait for) the same snapshot. */
  tx: Queryable
  frame(f: FrameInput): void
  event(kind: string, data: Record<string, unknown>): void
}

export type RunListener = (runId: string) => void

/** The plan counts a frame moves: a step is completed by its call or its failure, escalated by an approval request. */
export function countFrame(run: RunRecord, kind: string): void {
  if (kind === 'tool.call' || kind === 'step.failed') run.stepsCompleted += 1
  else if (kind === 'approval.requested') run.stepsEscalated += 1
}

/**
 * The single write path for runs: lock the row, apply a change, append its frames (gap-free seq) and events,
 * keep the carrying task in step, all in one transaction. Everything that moves a run goes through `change`.
 */
export class RunRecorder {
  constructor(
    private readonly db: Db,
    private readonly runs: RunRepository,
    private readonly clock: Clock,
    private readonly events: EventsPort,
    private readonly changes: ChangeFeed = new LocalChangeFeed(),
    private readonly telemetry: RunTelemetry = NO_RUN_TELEMETRY,
  ) {}

  /** Runs changed by any replica. */
  onChange(listener: RunListener): () => void {
    return this.changes.subscribe((c) => {
      if (c.kind === 'run') listener(c.runId)
    })
  }

  async change<T>(
    runId: string,
    fn: (c: RunChange) => T | Promise<T>,
  ): Promise<{ run: RunRecord; value: T }> {
    // A unit of work may read a run again after this change (a GraphQL document of several mutations), so only a
    // transaction of its own sends the writes with its COMMIT: nothing in it reads the run once it is saved.
    const writeBehind = !this.db.inUnitOfWork()
    const result = await this.db.transaction(async (tx) => {
      const repo = writeBehind ? this.runs.writingAtCommit(tx) : this.runs.in(tx)
      const run = await repo.lock(runId)
      // Stryker disable next-line ConditionalExpression,StringLiteral: unreachable: runs are never deleted and every caller found the run first (without the throw, the next line throws a TypeError instead)
      if (!run) throw new Error(`run ${runId} vanished`)
      const before: RunStatus = run.status
      const now = this.clock.now()
      const frames: FrameRecord[] = []
      const events: { kind: string; data: Record<string, unknown> }[] = []
      const value = await fn({
        run,
        now,
        tx,
        frame: (f) => {
          run.frameCount += 1
          countFrame(run, f.kind)
          frames.push({
            seq: run.frameCount,
            ts: now,
            kind: f.kind,
            stepId: f.stepId ?? null,
            tool: f.tool ?? null,
            toolId: f.toolId ?? null,
            policy: f.policy ?? null,
            latencyMs: f.latencyMs ?? null,
            result: f.result ?? null,
            detail: f.detail ?? null,
          })
        },
        event: (kind, data) => events.push({ kind, data }),
      })
      run.updatedAt = now
      await repo.save(run)
      for (const f of frames) await repo.appendFrame(run.id, f)
      if (run.status !== before && run.taskId) {
        await repo.followTask(run.taskId, run.id, run.status, run.outcome, now)
        if (isTerminal(run.status)) {
          events.push({
            kind: `task.${run.status}`,
            data: { task_id: run.taskId, agent_id: run.agentId, run_id: run.id, status: run.status },
          })
        }
      }
      for (const e of events) await this.appendEvent(tx, run, e.kind, e.data)
      return { run, value, before, frames }
    })
    // Every change wakes the outbox and the run's trace readers, also the rare one that moved nothing (a call's
    // answer dropped after a cancel): one read each, cheaper than telling the cases apart.
    this.telemetry.changed(result.before, result.run, result.frames)
    this.events.notify()
    this.changes.publish({ kind: 'run', runId })
    return { run: result.run, value: result.value }
  }

  private async appendEvent(tx: Queryable, run: RunRecord, kind: string, data: Record<string, unknown>) {
    await this.events.append(tx, {
      workspaceId: run.workspaceId,
      kind,
      // Stryker disable next-line ConditionalExpression,LogicalOperator,MethodExpression,StringLiteral: the event row's subject_id is stored for operators; no answer of the API, delivery, topic or destination reads it
      subjectId: kind.startsWith('task.') && run.taskId ? run.taskId : run.id,
      data: { run_id: run.id, agent_id: run.agentId, task_id: run.taskId, ...data },
    })
  }
}
