import type { RateCounterRepository } from '../../domain/limits/ports.js'
import type { CounterWindow } from '../../domain/limits/types.js'
import type { Db, Queryable } from '../db.js'
import { outsideUnits } from '../unit-of-work.js'
import { type BatchCount, RateCountBatches } from './rate-count-batches.js'

const UPSERT = `INSERT INTO rate_counters (workspace_id, window_name, window_start, count) VALUES ($1, $2, $3, 1)
       ON CONFLICT (workspace_id, window_name, window_start) DO UPDATE SET count = rate_counters.count + 1
       RETURNING count`

// Both windows in one statement, one round trip, for `$7` requests of one workspace counted together
// (rate-count-batches.ts): the first window gains all of them, the second only those the first let through.
// Row locks taken by ON CONFLICT DO UPDATE order every batch, from any replica, one after another.
const CONSUME_BATCH = `WITH first AS (
  INSERT INTO rate_counters (workspace_id, window_name, window_start, count) VALUES ($1, $2, $3, $7::bigint)
  ON CONFLICT (workspace_id, window_name, window_start) DO UPDATE SET count = rate_counters.count + EXCLUDED.count
  RETURNING count
), passing AS (
  SELECT LEAST(GREATEST($4::bigint - (count - $7::bigint), 0), $7::bigint) AS n FROM first
), second AS (
  INSERT INTO rate_counters (workspace_id, window_name, window_start, count)
  SELECT $1, $5::text, $6::bigint, n FROM passing WHERE n > 0
  ON CONFLICT (workspace_id, window_name, window_start) DO UPDATE SET count = rate_counters.count + EXCLUDED.count
  RETURNING count
)
SELECT (SELECT count FROM first) AS first_count, (SELECT count FROM second) AS second_count,
  (SELECT count FROM rate_counters WHERE workspace_id = $1 AND window_name = $5 AND window_start = $6) AS second_current`

/**
 * The same, with the current row version of each run in `$8` that the workspace has (its position from 1, and the
 * version, as a JSON array of pairs): the version confirmations of the workspace's cached GETs riding with their
 * count. Read in the statement's snapshot, like its counts.
 */
const CONSUME_BATCH_WITH_VERSIONS = `${CONSUME_BATCH},
  (SELECT json_agg(json_build_array(q.i, r.xmin::text))
     FROM unnest($8::text[]) WITH ORDINALITY AS q(id, i)
     JOIN runs r ON r.id = q.id AND r.workspace_id = $1) AS versions`

interface CountRow extends Record<string, unknown> {
  first_count: number
  second_count: number | null
  second_current: number | null
  /** [position from 1, row version] of each run found (CONSUME_BATCH_WITH_VERSIONS); null when none was. */
  versions?: [number, string][] | null
}

/** Counters in the store, shared by every replica: PostgreSQL. */
export class RateCounterRepo implements RateCounterRepository {
  constructor(
    /** Counting: single upserts on rows no transaction writes, the store's pipeline on PostgreSQL (db.ts). */
    private readonly db: Queryable,
    /** The bulk purge of ended windows stays off the pipeline. */
    private readonly purgeDb: Queryable = db,
  ) {}

  private readonly batches = new RateCountBatches((workspaceId, windows, n, runIds) =>
    this.countBatch(workspaceId, windows, n, runIds),
  )

  /** The batch's promise itself for the usual two windows: no async layer around it on every request. */
  consume(workspaceId: string, windows: readonly CounterWindow[]): Promise<number[]> {
    const [first, second] = windows
    if (windows.length === 2 && first && second) return this.batches.consume(workspaceId, [first, second])
    return this.consumeEach(workspaceId, windows)
  }

  private async consumeEach(workspaceId: string, windows: readonly CounterWindow[]): Promise<number[]> {
    const used: number[] = []
    let counting = true
    for (const w of windows) {
      const n = counting
        ? await this.increment(workspaceId, w.name, w.start)
        : await this.current(workspaceId, w.name, w.start)
      used.push(n)
      if (n > w.quota) counting = false
    }
    return used
  }

  private async countBatch(
    workspaceId: string,
    [first, second]: readonly [CounterWindow, CounterWindow],
    n: number,
    runIds: readonly string[],
  ): Promise<BatchCount & { versions: Map<number, string> }> {
    const params = [workspaceId, first.name, first.start, first.quota, second.name, second.start, n]
    // Outside any unit of work whatever context drains the lane: the statement counts and confirms for many
    // requests, and must neither hold the counters' row locks until a transaction ends nor see its uncommitted rows.
    const row = await outsideUnits(() =>
      runIds.length === 0
        ? this.db.one<CountRow>(CONSUME_BATCH, params)
        : this.db.one<CountRow>(CONSUME_BATCH_WITH_VERSIONS, [...params, runIds]),
    )
    const versions = new Map<number, string>()
    for (const [i, version] of row?.versions ?? []) versions.set(Number(i) - 1, String(version))
    return {
      firstCount: Number(row?.first_count ?? 0),
      secondCount: row?.second_count == null ? null : Number(row.second_count),
      secondCurrent: Number(row?.second_current ?? 0),
      versions,
    }
  }

  /** See RateCountBatches.ride: a run's row version read with the workspace's next count, when one is waiting. */
  ride(workspaceId: string, runId: string): Promise<string | undefined> | undefined {
    return this.batches.ride(workspaceId, runId)
  }

  async flush(): Promise<void> {}

  /** One atomic upsert: concurrent requests on any replica each get a distinct count. */
  async increment(workspaceId: string, window: string, windowStart: number): Promise<number> {
    const row = await this.db.one<{ count: number }>(UPSERT, [workspaceId, window, windowStart])
    return Number(row?.count ?? 0)
  }

  async current(workspaceId: string, window: string, windowStart: number): Promise<number> {
    const row = await this.db.one<{ count: number }>(
      'SELECT count FROM rate_counters WHERE workspace_id = $1 AND window_name = $2 AND window_start = $3',
      [workspaceId, window, windowStart],
    )
    return Number(row?.count ?? 0)
  }

  /** Writes counts kept elsewhere (memory) back; the count only grows within a window. */
  async store(workspaceId: string, window: string, windowStart: number, count: number): Promise<void> {
    await this.db.run(
      `INSERT INTO rate_counters (workspace_id, window_name, window_start, count) VALUES ($1, $2, $3, $4)
       ON CONFLICT (workspace_id, window_name, window_start)
       DO UPDATE SET count = CASE WHEN rate_counters.count > $4 THEN rate_counters.count ELSE $4 END`,
      [workspaceId, window, windowStart, count],
    )
  }

  async purgeBefore(windowStart: number): Promise<number> {
    return this.purgeDb.run('DELETE FROM rate_counters WHERE window_start < $1', [windowStart])
  }
}

interface Entry {
  workspaceId: string
  name: string
  start: number
  endsAt: number
  count: number
  /** The count last written to the store. */
  stored: number
}

/**
 * Counters for the embedded store, where this server is the only writer: counted in memory (no disk write per
 * request), exact because counting happens synchronously once a window's entry is loaded. A window is loaded
 * from `rate_counters` the first time it is seen, and counts are written back about once a second and on
 * shutdown, so a graceful restart resumes the same figures; a crash forgets at most the last unflushed second.
 */
export class MemoryRateCounters implements RateCounterRepository {
  private readonly entries = new WindowTable()
  private readonly loading = new Map<string, Promise<Entry>>()
  private readonly repo: RateCounterRepo

  constructor(private readonly db: Db) {
    this.repo = new RateCounterRepo(db)
  }

  async consume(workspaceId: string, windows: readonly CounterWindow[]): Promise<number[]> {
    const entries: Entry[] = []
    for (const w of windows)
      entries.push(this.entries.get(workspaceId, w) ?? (await this.load(workspaceId, w)))
    return count(entries, windows)
  }

  consumeNow(workspaceId: string, windows: readonly CounterWindow[]): number[] | undefined {
    const entries: Entry[] = []
    for (const w of windows) {
      const entry = this.entries.get(workspaceId, w)
      if (!entry) return undefined
      entries.push(entry)
    }
    return count(entries, windows)
  }

  private load(workspaceId: string, w: CounterWindow): Promise<Entry> {
    const key = keyOf(workspaceId, w)
    let pending = this.loading.get(key)
    if (!pending) {
      pending = this.repo
        .current(workspaceId, w.name, w.start)
        .then((count) => {
          const entry = this.entries.get(workspaceId, w) ?? {
            workspaceId,
            name: w.name,
            start: w.start,
            endsAt: w.start + w.windowMs,
            count,
            stored: count,
          }
          this.entries.add(entry)
          return entry
        })
        .finally(() => this.loading.delete(key))
      this.loading.set(key, pending)
    }
    return pending
  }

  /** Writes changed counts in one transaction, then forgets windows that have ended. */
  async flush(now: number): Promise<void> {
    const dirty = this.entries.values().filter((e) => e.count !== e.stored)
    if (dirty.length > 0) {
      const counts = dirty.map((e) => e.count)
      await this.db.transaction(async (tx) => {
        const repo = new RateCounterRepo(tx)
        for (const [i, e] of dirty.entries())
          await repo.store(e.workspaceId, e.name, e.start, counts[i] as number)
      })
      for (const [i, e] of dirty.entries()) e.stored = counts[i] as number
    }
    this.entries.removeIf((e) => e.endsAt <= now && e.count === e.stored)
  }

  purgeBefore(windowStart: number): Promise<number> {
    return this.repo.purgeBefore(windowStart)
  }
}

/**
 * Counts one request in loaded windows, in order, stopping after the first that refuses it. Synchronous, so
 * concurrent requests cannot interleave between reading and counting.
 */
function count(entries: readonly Entry[], windows: readonly CounterWindow[]): number[] {
  const used: number[] = []
  let counting = true
  for (let i = 0; i < windows.length; i++) {
    const e = entries[i] as Entry
    if (counting) e.count += 1
    used.push(e.count)
    if (e.count > (windows[i] as CounterWindow).quota) counting = false
  }
  return used
}

/**
 * Loaded windows by workspace. A request finds its windows through the workspace id it already holds, whose hash
 * V8 keeps on the string, instead of a key string built and hashed per window per request.
 */
class WindowTable {
  private readonly byWorkspace = new Map<string, Entry[]>()

  get(workspaceId: string, w: CounterWindow): Entry | undefined {
    const list = this.byWorkspace.get(workspaceId)
    if (!list) return undefined
    for (const e of list) if (e.start === w.start && e.name === w.name) return e
    return undefined
  }

  /** Adds a window not yet in the table (callers look it up first). */
  add(e: Entry): void {
    const list = this.byWorkspace.get(e.workspaceId)
    if (list) list.push(e)
    else this.byWorkspace.set(e.workspaceId, [e])
  }

  values(): Entry[] {
    return [...this.byWorkspace.values()].flat()
  }

  removeIf(gone: (e: Entry) => boolean): void {
    for (const [workspaceId, list] of this.byWorkspace) {
      const kept = list.filter((e) => !gone(e))
      if (kept.length === 0) this.byWorkspace.delete(workspaceId)
      else if (kept.length !== list.length) this.byWorkspace.set(workspaceId, kept)
    }
  }
}

function keyOf(workspaceId: string, w: CounterWindow): string {
  return `${workspaceId}\u0000${w.name}\u0000${w.start}`
}
