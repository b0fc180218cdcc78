import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { reportStoreProblem } from '../problems.js'

/**
 * Checkpoints the WAL from a worker thread with its own connection. SQLite's automatic checkpoint runs inside the
 * COMMIT that crosses the threshold, on the event loop: it copies pages into the database file and waits for two
 * fsyncs, which makes that COMMIT slow under write load and stalls every request queued behind it.
 * A PASSIVE checkpoint never takes the write lock, so the server's writer and readers go on meanwhile. Durability
 * is unchanged: a commit is durable in the WAL; the checkpoint only moves pages into the main file.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.path)
db.pragma('busy_timeout = 5000')
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)')
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message) })
  }
}
const timer = setInterval(checkpoint, workerData.intervalMs)
parentPort.on('message', (message) => {
  if (message !== 'stop') return
  clearInterval(timer)
  checkpoint()
  db.close()
  parentPort.postMessage({ stopped: true })
})
`

export class WalCheckpointer {
  private readonly worker: Worker

  constructor(path: string, intervalMs = 250) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, driver, intervalMs } })
    this.worker.on('message', (message: { error?: string }) => {
      if (message.error) reportStoreProblem(new Error(message.error), 'WAL checkpoint failed')
    })
    this.worker.on('error', (err) => reportStoreProblem(err, 'the WAL checkpointer stopped'))
    // Never what keeps the process alive: a server's own handles do that.
    this.worker.unref()
  }

  /**
   * A last checkpoint, then the worker's connection is closed (bounded: a stuck worker is terminated). The worker
   * and the bound are referenced while this waits: at the end of a shutdown they are all that is left, and a wait
   * on unreferenced handles only let the process end with an unsettled promise (exit code 13) and no "stopped" line.
   */
  async stop(): Promise<void> {
    this.worker.ref()
    const stopped = new Promise<void>((resolve) => {
      this.worker.on('message', (message: { stopped?: boolean }) => {
        if (message.stopped) resolve()
      })
      this.worker.once('exit', () => resolve())
    })
    this.worker.postMessage('stop')
    let bound: NodeJS.Timeout | undefined
    await Promise.race([stopped, new Promise((resolve) => (bound = setTimeout(resolve, 2000)))])
    clearTimeout(bound)
    await this.worker.terminate()
  }
}
