/**
 * A lower bound for what issue 22's request observation can cost, for `bench:observability --a-floor`: the same
 * surface hook as the reference server's observer (src/observability/observer.ts) doing the least any
 * implementation of it must do, with no library. Per request: one JSON line with the same fields, built as a
 * template literal (no escaping: every value here is an id, a number or a route template) into a 16 kB batch
 * written to stdout with `writeSync`; one latency observation counted in a Float64Array bucket row per route
 * template × method × status class (no labels, no hashing); the in-flight count as a plain integer.
 *
 * Not a design to ship (no escaping, no levels, no exposition, nothing pino and prom-client give an operator): a
 * floor. Whatever it costs over no observation at all, a real request log and histogram cost at least that much.
 */
import { writeSync } from 'node:fs'
import type { RequestObservation, SurfaceObserver } from '../../src/surface/observe.js'

/** src/observability/metrics.ts's request buckets. */
const BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** A row: one count per bucket, +Inf, then the sum. */
const ROW = BOUNDS.length + 2
const BATCH_BYTES = 16_384

/** Requests in flight and the bucket rows, kept where a scrape would read them. */
export class FloorObserver implements SurfaceObserver {
  inFlight = 0
  readonly rows = new Map<string, Map<string, Float64Array>>()
  private readonly batch = Buffer.allocUnsafe(BATCH_BYTES)
  private length = 0

  constructor(private readonly fd = 1) {
    setInterval(() => this.flush(), 1000).unref()
    process.on('exit', () => this.flush())
  }

  requestStarted(): void {
    this.inFlight += 1
  }

  request(o: RequestObservation): void {
    this.inFlight -= 1
    const seconds = o.durationMs / 1000
    const row = this.rowOf(o.route, o.method)
    const base = Math.min(4, Math.max(0, ((o.status / 100) | 0) - 1)) * ROW
    let bucket = 0
    while (bucket < BOUNDS.length && seconds > (BOUNDS[bucket] as number)) bucket++
    row[base + bucket] = (row[base + bucket] as number) + 1
    row[base + ROW - 1] = (row[base + ROW - 1] as number) + seconds
    const line = `{"level":30,"time":${Date.now()},"pid":${process.pid},"method":"${o.method}","route":"${o.route}","req_id":"${o.requestId}","status":${o.status},"duration_ms":${Math.round(o.durationMs * 100) / 100},"workspace_id":"${o.workspaceId}","key_id":"${o.keyId}","msg":"request"}\n`
    if (this.length + line.length * 3 > BATCH_BYTES) this.flush()
    this.length += this.batch.write(line, this.length, 'utf8')
  }

  socket(): void {}

  private rowOf(route: string, method: string): Float64Array {
    let byMethod = this.rows.get(route)
    if (!byMethod) {
      byMethod = new Map()
      this.rows.set(route, byMethod)
    }
    let row = byMethod.get(method)
    if (!row) {
      row = new Float64Array(ROW * 5)
      byMethod.set(method, row)
    }
    return row
  }

  /** Synchronous and whole, so the one batch is reused. */
  flush(): void {
    let written = 0
    while (written < this.length) written += writeSync(this.fd, this.batch, written, this.length - written)
    this.length = 0
  }
}
