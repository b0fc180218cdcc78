/**
 * `conformance:stryker --postgres auto` / `--also-postgres auto`: a throwaway PostgreSQL for the mutation run, started
 * the way the tests start theirs (test/support/postgres.ts: a container when an engine answers, else a cluster of the
 * machine's own binaries). Prints `{"url": …}` once it takes connections; stops the server and exits when told
 * (SIGTERM, SIGINT) or when its parent goes (its stdin ends).
 */
import { startPostgres } from '../../test/support/postgres.js'

const server = await startPostgres()
let stopping: Promise<void> | undefined
const stop = () => {
  stopping ??= server.stop().finally(() => process.exit(0))
  return stopping
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
process.stdin.once('end', stop)
process.stdin.resume()
process.stdout.write(`${JSON.stringify({ url: server.url, via: server.via })}\n`)
