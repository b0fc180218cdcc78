/**
 * What one request log line costs in isolation, in ns per line, each encoded into a 16 kB batch as the server's
 * LineBatch does (src/observability/logger.ts): the server's own request line (its surface observer with metrics
 * off, on the server's pino settings), `JSON.stringify` of the same object, and the template literal of
 * bench/support/floor-observer.ts. In the server each costs more than here (cache and GC share the request's
 * path); bench:observability measures that.
 *
 *   npx tsx bench/log-line.ts [--lines N]
 */

import { createLogger } from '../src/observability/logger.js'
import { createSurfaceObserver } from '../src/observability/observer.js'
import type { RequestObservation } from '../src/surface/observe.js'

const args = process.argv.slice(2)
const at = args.indexOf('--lines')
const LINES = Math.min(10_000_000, Math.max(10_000, Number(at >= 0 ? args[at + 1] : 2_000_000)))
const BATCH_BYTES = 16_384

const batch = Buffer.allocUnsafe(BATCH_BYTES)
let length = 0
const destination = {
  write(line: string): void {
    if (length + line.length * 3 > BATCH_BYTES) length = 0
    length += batch.write(line, length, 'utf8')
  },
}

const observed = (i: number): RequestObservation => ({
  method: 'GET',
  route: '/v1/runs/{run_id}',
  requestId: `req_01jbenchbenchbenchbenchb${i & 7}`,
  status: 200,
  durationMs: 0.0512 + (i & 3),
  workspaceId: 'ws_01jbenchbenchbenchbenchbe',
  keyId: 'key_01jbenchbenchbenchbenchb',
  errorCode: undefined,
})

const server = createSurfaceObserver(undefined, createLogger({ level: 'info', destination }))
const ways: Record<string, (o: RequestObservation) => void> = {
  'the server (pino)': (o) => server.request(o),
  'JSON.stringify': (o) =>
    destination.write(
      `${JSON.stringify({
        level: 30,
        time: Date.now(),
        pid: process.pid,
        method: o.method,
        route: o.route,
        req_id: o.requestId,
        status: o.status,
        duration_ms: Math.round(o.durationMs * 100) / 100,
        workspace_id: o.workspaceId,
        key_id: o.keyId,
        msg: 'request',
      })}\n`,
    ),
  'template literal (the floor)': (o) =>
    destination.write(
      `{"level":30,"time":${Date.now()},"pid":${process.pid},"method":"${o.method}","route":"${o.route}","req_id":"${o.requestId}","status":${o.status},"duration_ms":${Math.round(o.durationMs * 100) / 100},"workspace_id":"${o.workspaceId}","key_id":"${o.keyId}","msg":"request"}\n`,
    ),
}

console.log(`bench:log-line: ${LINES} lines each, twice in turn, encoded into a ${BATCH_BYTES}-byte batch`)
for (const round of [1, 2]) {
  for (const [name, write] of Object.entries(ways)) {
    for (let i = 0; i < LINES / 10; i++) write(observed(i))
    const started = process.hrtime.bigint()
    for (let i = 0; i < LINES; i++) write(observed(i))
    const ns = Number(process.hrtime.bigint() - started) / LINES
    console.log(`  round ${round}  ${name.padEnd(30)} ${ns.toFixed(0)} ns/line`)
  }
}
