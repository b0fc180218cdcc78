/**
 * How long an operator waits for `agentops keys create` / `keys revoke` on a busy embedded store. Target (issue 25):
 * within 1 s while a SQLite server drains a large queue and takes ingest batches.
 *
 *   npm run bench:operator -- [--trials <n>] [--backlog <runs>]
 *
 * First the same commands with no server running (the floor: a Node process's start, the CLI's modules, the
 * store's open and its last connection's checkpoint), then under the load of test/support/operator-load.ts: a real `agentops serve` draining the backlog
 * while four clients ingest back to back. Each trial is one compiled CLI process, timed from its spawn to its exit;
 * p50 and max are over the trials. Loopback only; every command is bounded (60 s).
 */
import { agentopsCli } from '../test/support/cluster.js'
import { startOperatorLoad } from '../test/support/operator-load.js'

const args = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const TRIALS = Math.min(50, Math.max(1, Number(option('--trials') ?? 10)))
const BACKLOG = Math.min(200_000, Math.max(1_000, Number(option('--backlog') ?? 100_000)))
const TARGET_MS = 1_000

async function timed(command: string[], url: string): Promise<number> {
  const began = performance.now()
  await agentopsCli(command, url)
  return performance.now() - began
}

function summary(label: string, ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b)
  const p50 = sorted[Math.floor((sorted.length - 1) / 2)] ?? 0
  const max = sorted.at(-1) ?? 0
  const verdict = max <= TARGET_MS ? 'met' : 'missed'
  return `${label.padEnd(34)} p50 ${p50.toFixed(0).padStart(5)} ms  max ${max.toFixed(0).padStart(5)} ms  (${TRIALS} trials; target ≤ ${TARGET_MS} ms: ${verdict})`
}

async function measure(loaded: boolean): Promise<void> {
  const load = await startOperatorLoad({
    // The floor: the same store, its server stopped before the first command.
    backlog: loaded ? BACKLOG : 1_000,
    revocable: TRIALS,
    ingestClients: loaded ? 4 : 1,
    ingestBatch: 50,
  })
  try {
    if (!loaded) await load.stop()
    const create: number[] = []
    const revoke: number[] = []
    const queuedBefore = loaded ? load.queued() : 0
    for (const key of load.revocable) {
      create.push(await timed(['keys', 'create', '--workspace', 'ops', '--json'], load.url))
      revoke.push(await timed(['keys', 'revoke', key.keyId, '--json'], load.url))
    }
    const state = loaded
      ? `, while the server drained ${queuedBefore - load.queued()} runs (${load.queued()} left) and took ${load.batches()} ingest batches`
      : ''
    console.log(`${loaded ? 'busy server' : 'no server'}${state}`)
    console.log(summary('  agentops keys create', create))
    console.log(summary('  agentops keys revoke', revoke))
    if (loaded && load.queued() === 0)
      console.log('  (the backlog ran out before the last trial: raise --backlog)')
  } finally {
    await load.stop()
  }
}

console.log(`bench:operator: ${TRIALS} trials of each command; backlog ${BACKLOG} queued runs`)
await measure(false)
await measure(true)
