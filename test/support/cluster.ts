/**
 * Several reference servers on one database behind a round-robin balancer, as an operator would run them:
 * each replica is a real `agentops serve` process (so a test can kill one), and the balancer hands each HTTP
 * request (proxied by http-proxy-3) and each WebSocket connection (relayed as a byte stream) to the next live
 * replica in turn.
 * Used by the cluster tests and by `npm run cluster`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { shellLine } from '../../conformance/src/reference.js'
import { SERVER_NODE_OPTIONS } from '../../src/cli/node-options.js'
import { type Balancer, type BalancerOptions, startBalancer as startSharedBalancer } from './balancer.mjs'
import { listenPort, testPort } from './ports.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CLI = `${ROOT}bin/agentops.mjs`
const run = promisify(execFile)

export interface Replica {
  index: number
  url: string
  pid: number
  /** The replica's own output so far (the newest 20 kB, in whole lines). */
  output(): string
  /** Resolves with the exit code (or signal name) once the process ended. */
  exited: Promise<number | string>
  kill(signal?: NodeJS.Signals): void
}

export type { Balancer, BalancerOptions }

export interface Cluster {
  /** The balancer's address: what clients use. */
  url: string
  replicas: Replica[]
  balancer: Balancer
  stop(): Promise<void>
}

export interface ClusterOptions {
  databaseUrl: string
  replicas: number
  /** Extra environment for every replica (lease settings, poll periods). */
  env?: NodeJS.ProcessEnv
  /** Called with each whole line a replica prints, prefixed with its index (the cluster script shows them). */
  onLine?: (line: string) => void
}

/** Runs one `agentops` CLI command against a store; resolves with its standard output. */
export async function agentopsCli(args: string[], databaseUrl: string): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, ...args, '--database-url', databaseUrl], {
    cwd: ROOT,
    timeout: 60_000,
  })
  return stdout
}

/** Issues a key with the reference CLI (`agentops keys create --json`) and returns its token. */
export async function issueToken(databaseUrl: string, args: string[]): Promise<string> {
  const stdout = await agentopsCli(['keys', 'create', ...args, '--json'], databaseUrl)
  const token = (JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { token?: string }).token
  if (!token) throw new Error(`no token in ${stdout}`)
  return token
}

/**
 * The command that issues the conformance suite's identities on a store in one step (`agentops keys
 * provision-conformance`, fresh workspaces each time), for the suite's `--provision`.
 */
export function conformanceProvisionCommand(databaseUrl: string): string {
  return shellLine([process.execPath, CLI, 'keys', 'provision-conformance', '--database-url', databaseUrl])
}

export async function startReplica(
  index: number,
  databaseUrl: string,
  env: NodeJS.ProcessEnv = {},
  onLine?: (line: string) => void,
): Promise<Replica> {
  const port = await testPort()
  const child: ChildProcess = spawn(
    process.execPath,
    // As `npm start` runs the server.
    [
      ...SERVER_NODE_OPTIONS,
      CLI,
      'serve',
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--database-url',
      databaseUrl,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: a Ctrl-C meant for the parent does not reach it besides the parent's own signal.
      detached: true,
    },
  )
  let output = ''
  const keep = (d: Buffer) => {
    output += d.toString()
    // The newest 20 kB in whole lines: a line cut at its start could read as another (a JSON log line's string
    // holding JSON, cut just before its inner `{`).
    if (output.length > 20_000) output = output.slice(output.indexOf('\n', output.length - 20_000) + 1)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  if (onLine) {
    // Whole lines, each stream on its own: a chunk may end inside a line, which the next chunk finishes.
    for (const stream of [child.stdout, child.stderr]) {
      let partial = ''
      stream?.on('data', (d: Buffer) => {
        const lines = (partial + d.toString()).split('\n')
        partial = lines.pop() ?? ''
        for (const line of lines) if (line.trim()) onLine(`[${index}] ${line}`)
      })
      stream?.on('end', () => {
        if (partial.trim()) onLine(`[${index}] ${partial}`)
      })
    }
  }
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  )
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  // The last thing /readyz said (or why it could not be asked): a replica that never gets ready says where it stood.
  let lastAnswer = 'never asked'
  for (;;) {
    if (child.exitCode !== null) throw new Error(`replica ${index} exited early:\n${output}`)
    try {
      // Ready, not only alive: the replica listens while it migrates the store and answers 503 until it is done.
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })
      if (res.ok) break
      lastAnswer = `${res.status} ${await res.text()}`
    } catch (err) {
      // not listening yet
      lastAnswer = `no answer (${(err as Error).message})`
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(
        `replica ${index} was not ready (/readyz) within 60 s; its last answer: ${lastAnswer}\n${output}`,
      )
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    index,
    url,
    pid: child.pid ?? 0,
    output: () => output,
    exited,
    kill: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    },
  }
}

/** The shared balancer (./balancer.mjs), on a harness port (./ports.ts) unless `port` names one. */
export async function startBalancer(
  targets: string[],
  port = 0,
  options: BalancerOptions = {},
): Promise<Balancer> {
  return startSharedBalancer(targets, port || (await listenPort()), options)
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  // Migrate once up front: replicas starting together would otherwise race on the first migration.
  await agentopsCli(['keys', 'list', '--workspace', 'cluster-bootstrap'], options.databaseUrl).catch(
    () => undefined,
  )
  const replicas = await Promise.all(
    Array.from({ length: options.replicas }, (_, i) =>
      startReplica(i, options.databaseUrl, options.env, options.onLine),
    ),
  )
  const balancer = await startBalancer(replicas.map((r) => r.url))
  return {
    url: balancer.url,
    replicas,
    balancer,
    async stop() {
      await balancer.close()
      for (const r of replicas) r.kill('SIGTERM')
      const killer = setTimeout(() => {
        for (const r of replicas) r.kill('SIGKILL')
      }, 15_000)
      await Promise.all(replicas.map((r) => r.exited))
      clearTimeout(killer)
    },
  }
}
