import { randomUUID } from 'node:crypto'
import type { RunRepository } from '../ports.js'
import { type LeaseTelemetry, NO_LEASE_TELEMETRY } from '../telemetry.js'
import type { RunExecutor } from './executor.js'

export interface SchedulerOptions {
  concurrency: number
  /** How long a claimed run stays ours without renewal; another replica may take it over after that. */
  leaseMs: number
  pollMs: number
  /** Told when a pass takes over runs another process let lapse. */
  leases?: LeaseTelemetry
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
      .catch((err) => console.error('[scheduler]', err))
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
    const ids = await repo.runnable(Date.now(), free, [...this.driving.keys()])
    let takenOver = 0
    try {
      for (const id of ids) {
        if (this.stopped) return
        const claim = await repo.claim(id, this.owner, Date.now(), Date.now() + this.options.leaseMs)
        if (!claim) continue
        if (claim === 'taken-over') takenOver++
        const drive = this.drive(id).finally(() => {
          this.driving.delete(id)
          this.wake()
        })
        this.driving.set(id, drive)
      }
    } finally {
      if (takenOver > 0) (this.options.leases ?? NO_LEASE_TELEMETRY).takenOver('runs', takenOver)
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
    try {
      while (!this.stopped && (await this.executor.advance(id)) === 'continue') {
        // one step per iteration, so a pause or cancel lands between steps
      }
    } catch (err) {
      if (!this.stopped) console.error(`[scheduler] run ${id}:`, err)
    } finally {
      clearInterval(renew)
      // Also on stop: the step in hand has finished, so another replica may take the run over at once.
      await repo.release(id, this.owner).catch(() => undefined)
    }
  }
}
