/**
 * The server `bench/queue.ts` measures, in its own process so the GET client never shares its event loop. Run as
 * `node --import tsx bench/queue-server.ts <database-url> [<template run id> <size>]`; prints `{"url": ...}` once it
 * listens on 127.0.0.1 (its scheduler has started by then) and exits on SIGTERM.
 *
 * With a template and a size it also keeps the backlog at that size, on the server's own store (one writer: on
 * SQLite a second process would wait for the server's write lock, and fail with "database is locked" once a busy
 * server has kept it for 5 s): every 10 ms it reads the head of the queue (one probe of runs_claim) and appends as
 * many queued copies of the template as were drained since, at the back, like runs clients keep submitting. The
 * backlog's runs are `run_q` and their number, in queue order.
 */
import { startServer } from '../src/server.js'
import { openDb } from '../src/store/open.js'
import { cloneRuns } from '../test/support/run-backlog.js'

const PREFIX = 'run_q'
const FEED_EVERY_MS = 10

const [databaseUrl, template, sizeText] = process.argv.slice(2)
if (!databaseUrl) throw new Error('usage: queue-server.ts <database-url> [<template run id> <size>]')
const db = await openDb(databaseUrl)
const server = await startServer({ config: { port: 0, host: '127.0.0.1', databaseUrl }, db })
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`)

let stopped = false
const size = Number(sizeText)
const feeding =
  template && Number.isSafeInteger(size) && size > 0
    ? (async () => {
        let last = size
        while (!stopped) {
          const row = await db.one<{ id: string }>(
            `SELECT id FROM runs WHERE status IN ('queued', 'running') ORDER BY priority DESC, seq LIMIT 1`,
          )
          const first = row ? Number(row.id.slice(PREFIX.length)) : last + 1
          const missing = size - (last - first + 1)
          if (missing > 0) {
            await cloneRuns(db, template, missing, {
              idPrefix: PREFIX,
              status: 'queued',
              firstNumber: last + 1,
            })
            last += missing
          }
          await new Promise((r) => setTimeout(r, FEED_EVERY_MS))
        }
      })().catch((err) => {
        // The measurement would go on with a shrinking backlog: end it, loudly (the bench's GETs then fail).
        console.error('[queue-server] feeding the backlog failed:', err)
        process.exit(1)
      })
    : Promise.resolve()

process.on('SIGTERM', () => {
  stopped = true
  void feeding
    .then(() => server.close())
    .then(() => db.close())
    .then(() => process.exit(0))
})
