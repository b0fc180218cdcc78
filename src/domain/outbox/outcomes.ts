import type { DeliveryRepository } from '../webhooks/ports.js'
import type { AttemptRecord } from '../webhooks/types.js'

interface Waiting {
  attempt: AttemptRecord
  resolve: (recorded: boolean) => void
  reject: (err: unknown) => void
}

/**
 * Writes the outcomes of a dispatcher's attempts together: those that end in one turn of the event loop (their
 * answers read in one poll of the sockets) go to the store in one statement, at the end of that turn, rather than
 * one UPDATE each. Each caller still hears of its own outcome only once it is written, so an attempt frees its pool
 * slot after its outcome is stored, as before. When the shared statement fails, each outcome is written on its own:
 * one the store refuses fails its own caller, never the others.
 */
export class OutcomeWriter {
  private waiting: Waiting[] = []

  constructor(
    private readonly deliveries: Pick<DeliveryRepository, 'recordAttempts'>,
    /** The lease owner the outcomes are written as (the dispatcher). */
    private readonly owner: string,
  ) {}

  /** Whether the outcome was written (false: the lease was lost and the row is left to its new owner). */
  record(attempt: AttemptRecord): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(() => void this.flush())
      this.waiting.push({ attempt, resolve, reject })
    })
  }

  private async flush(): Promise<void> {
    const batch = this.waiting
    this.waiting = []
    try {
      const recorded = await this.deliveries.recordAttempts(
        this.owner,
        batch.map((w) => w.attempt),
      )
      for (const w of batch) w.resolve(recorded.has(w.attempt.id))
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err)
        return
      }
      await Promise.all(
        batch.map(async (w) => {
          try {
            const recorded = await this.deliveries.recordAttempts(this.owner, [w.attempt])
            w.resolve(recorded.has(w.attempt.id))
          } catch (alone) {
            w.reject(alone)
          }
        }),
      )
    }
  }
}
