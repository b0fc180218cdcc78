import type { DeliveryRepository } from '../webhooks/ports.js'
import type { AttemptRecord } from '../webhooks/types.js'

interface Waiting {
  attempt: AttemptRecord
  resolve: (recorded: boolean) => void
  reject: (err: unknown) => void
}

/**
 * Writes the outcomes of a dispatcher's attempts together: those that end in one turn of the event loop (their
 * answers read in one poll of the sockets) go to the store in one call, at the end of that turn, rather than one
 * UPDATE each (on PostgreSQL a round trip and a commit each; SQLite's group commit already joins them, so there
 * each outcome is written at once). Each caller still hears of its own outcome only once it is written, so an attempt frees its pool
 * slot after its outcome is stored, as before. When the shared statement fails, each outcome is written on its own:
 * one the store refuses fails its own caller, never the others.
 */
export class OutcomeWriter {
  private waiting: Waiting[] = []

  constructor(
    private readonly deliveries: Pick<DeliveryRepository, 'recordAttempts' | 'gathersOutcomes'>,
    /** The lease owner the outcomes are written as (the dispatcher). */
    private readonly owner: string,
  ) {}

  /** Whether the outcome was written (false: the lease was lost and the row is left to its new owner). */
  record(attempt: AttemptRecord): Promise<boolean> {
    // A store that commits a turn's writes together anyway takes each at once: waiting for the turn's end would
    // only hold the slot longer.
    // Stryker disable next-line BooleanLiteral,ConditionalExpression: a speed path, either way each outcome is written before its caller hears of it
    if (!this.deliveries.gathersOutcomes)
      return this.deliveries.recordAttempts(this.owner, [attempt]).then((ids) => ids.has(attempt.id))
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
