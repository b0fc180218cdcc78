import { randomUUID } from 'node:crypto'
import { CONSOLE_FAILURE_LOG, type FailureLog } from '../failure-log.js'
import type { LeaseTelemetry } from '../telemetry.js'
import type { Progress, RunExecutor } from './executor.js'
import type { RunRepository } from './ports.js'

export interface SchedulerOptions {
  concurrency: number
  /** How long a claimed run stays ours without renewal; another replica may take it over after that. */
  leaseMs: number
  pollMs: number
  /** Told when a pass takes over runs another process let lapse. */
  leases?: LeaseTelemetry
  /** Where a pass or a run that fails unexpectedly is logged; default standard error. */
  failures?: FailureLog
}

/**
 * Picks runnable runs (higher priority first, then age) and drives each with bounded concurrency. Leases use
 * wall-clock time, not the domain clock: they are a liveness mechanism between processes, not business time.
 * A run another process holds is skipped until its lease lapses, which is how a restart recovers its runs.
 */
export class RunScheduler {
  private readonly owner = randomUUID()
  private readonly driving = new Map<string, Promise<void>>()
  private timer: NodeJS.Timeout | undefined
  private stopped = true
  private ticking = false
  private again = false

  constructor(
    private readonly runs: RunRepository,
    private readonly executor: RunExecutor,
    private readonly options: SchedulerOptions,
  ) {}

  private get failures(): FailureLog {
    return this.options.failures ?? CONSOLE_FAILURE_LOG
  }

  start(): void {
    this.stopped = false
    this.timer = setInterval(() => this.wake(), this.options.pollMs)
    this.timer.unref()
    this.wake()
  }

  /** Stops picking runs and lets in-flight steps finish (bounded wait); each finished run's lease is released. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    const all = Promise.allSettled([...this.driving.values()])
    await Promise.race([all, new Promise((r) => setTimeout(r, 5000).unref())])
  }

  wake(): void {
    if (this.stopped) return
    if (this.ticking) {
      this.again = true
      return
    }
    this.ticking = true
    void this.tick()
      .catch((err: unknown) => this.failures.error({ err }, 'scheduler pass failed'))
      .finally(() => {
        this.ticking = false
        if (this.again) {
          this.again = false
          this.wake()
        }
      })
  }

  private async tick(): Promise<void> {
    const free = this.options.concurrency - this.driving.size
    if (free <= 0) return
    const repo = this.runs
    const now = Date.now()
    // Finding and leasing the next runs is one statement: one round trip per tick, however many runs it takes.
    const { ids, takenOver } = await repo.claimNext(this.owner, now, now + this.options.leaseMs, free)
    if (takenOver > 0) this.options.leases?.takenOver('runs', takenOver)
    for (const id of ids) {
      // A run in hand whose lease had lapsed comes back renewed: it is driven once, by the loop already on it.
      if (this.driving.has(id)) continue
      if (this.stopped) {
        await repo.release(id, this.owner).catch(() => undefined)
        continue
      }
      const drive = this.drive(id).finally(() => {
        this.driving.delete(id)
        this.wake()
      })
      this.driving.set(id, drive)
    }
  }

  private async drive(id: string): Promise<void> {
    const repo = this.runs
    const renew = setInterval(
      () => {
        void repo.claim(id, this.owner, Date.now(), Date.now() + this.options.leaseMs).catch(() => undefined)
      },
      Math.max(50, Math.floor(this.options.leaseMs / 3)),
    )
    renew.unref()
    let progress: Progress = 'continue'
    try {
      while (!this.stopped && progress === 'continue') {
        // one step per iteration, so a pause or cancel lands between steps
        progress = await this.executor.advance(id)
      }
    } catch (err) {
      progress = 'idle'
      if (!this.stopped) this.failures.error({ err, run_id: id }, 'run step failed')
    } finally {
      clearInterval(renew)
      // A finished run's last write dropped its lease. Otherwise (also on stop: the step in hand has finished)
      // the lease goes now, so another replica may take the run over at once.
      if (progress !== 'finished') await repo.release(id, this.owner).catch(() => undefined)
    }
  }
}
