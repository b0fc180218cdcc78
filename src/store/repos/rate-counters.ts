import type { RateCounterRepository } from '../../domain/ports.js'
import type { Queryable } from '../db.js'

export class RateCounterRepo implements RateCounterRepository {
  constructor(private readonly db: Queryable) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): RateCounterRepo {
    return new RateCounterRepo(tx)
  }

  /** One atomic upsert: concurrent requests on any replica each get a distinct count. */
  async increment(workspaceId: string, window: string, windowStart: number): Promise<number> {
    const row = await this.db.one<{ count: number }>(
      `INSERT INTO rate_counters (workspace_id, window_name, window_start, count) VALUES ($1, $2, $3, 1)
       ON CONFLICT (workspace_id, window_name, window_start) DO UPDATE SET count = rate_counters.count + 1
       RETURNING count`,
      [workspaceId, window, windowStart],
    )
    return Number(row?.count ?? 0)
  }

  async current(workspaceId: string, window: string, windowStart: number): Promise<number> {
    const row = await this.db.one<{ count: number }>(
      'SELECT count FROM rate_counters WHERE workspace_id = $1 AND window_name = $2 AND window_start = $3',
      [workspaceId, window, windowStart],
    )
    return Number(row?.count ?? 0)
  }

  async purgeBefore(windowStart: number): Promise<number> {
    return this.db.run('DELETE FROM rate_counters WHERE window_start < $1', [windowStart])
  }
}
