/**
 * `npm run cluster -- --replicas 3 [--port 8080]`: N reference servers on one PostgreSQL database behind a
 * round-robin balancer (HTTP requests and WebSocket connections alternate between replicas ready by /readyz), to watch replicas
 * behave as one service. Uses AGENTOPS_DATABASE_URL when it names PostgreSQL, else a throwaway local cluster.
 * Ctrl-C stops everything (the replicas shut down gracefully).
 */
import { parseArgs } from 'node:util'
import { issueToken, type Replica, startBalancer, startReplica } from '../test/support/cluster.js'
import { createDatabase, type PostgresServer, startPostgres } from '../test/support/postgres.js'

const { values } = parseArgs({
  options: { replicas: { type: 'string', default: '2' }, port: { type: 'string', default: '8080' } },
})
const count = Number(values.replicas)
const port = Number(values.port)
if (!Number.isInteger(count) || count < 1 || count > 16) throw new Error('--replicas must be 1..16')
if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port must be 0..65535')

let postgres: PostgresServer | undefined
let databaseUrl = process.env.AGENTOPS_DATABASE_URL ?? ''
if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
  console.log('cluster: AGENTOPS_DATABASE_URL is not PostgreSQL; starting a throwaway local cluster')
  postgres = await startPostgres()
  databaseUrl = await createDatabase(postgres.url)
}
console.log(`cluster: store ${databaseUrl.replace(/:[^:@/]*@/, ':***@')}`)
const token = await issueToken(databaseUrl, ['--workspace', 'cluster-demo', '--tier', 'pro'])
const replicas: Replica[] = []
for (let i = 0; i < count; i++) {
  // Still serving for 1 s after /readyz turned 503: two polls of the balancer below, so it stops sending first.
  const replica = await startReplica(i, databaseUrl, { AGENTOPS_SHUTDOWN_DRAIN_MS: '1000' }, (line) =>
    console.log(`replica ${line}`),
  )
  console.log(`cluster: replica ${i} at ${replica.url} (pid ${replica.pid})`)
  replicas.push(replica)
}
// The balancer asks each replica's /readyz twice a second: a replica that is migrating, has lost its store or has
// begun a graceful shutdown gets no new requests, before it closes a single connection.
const balancer = await startBalancer(
  replicas.map((r) => r.url),
  port,
  { readyzPollMs: 500 },
)
console.log(
  `cluster: balancer at ${balancer.url} (round robin over ${count} replicas, skipping any whose /readyz is not 200)`,
)
console.log(`cluster: a key of workspace cluster-demo: TOKEN=${token}`)
console.log(`  try: curl -s ${balancer.url}/v1/agents -H "Authorization: Bearer $TOKEN"`)
console.log(`       kill -TERM <a replica pid> to watch its runs and stream clients move to the others`)

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  console.log('cluster: stopping')
  await balancer.close()
  for (const r of replicas) r.kill('SIGTERM')
  await Promise.all(replicas.map((r) => r.exited))
  await postgres?.stop()
  process.exit(0)
}
// If this process dies some other way, the replicas (in their own process groups) go with it.
process.on('exit', () => {
  for (const r of replicas) r.kill('SIGKILL')
})
process.on('SIGINT', () => void stop())
process.on('SIGTERM', () => void stop())
