/**
 * The server `bench/queue.ts` measures, in its own process so the GET client never shares its event loop. Run as
 * `node --import tsx bench/queue-server.ts <database-url>`; prints `{"url": ...}` once it listens on 127.0.0.1
 * (its scheduler has started by then) and exits on SIGTERM.
 */
import { startServer } from '../src/server.js'

const databaseUrl = process.argv[2]
if (!databaseUrl) throw new Error('usage: queue-server.ts <database-url>')
const server = await startServer({ config: { port: 0, host: '127.0.0.1', databaseUrl } })
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`)
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0))
})
