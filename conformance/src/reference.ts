/**
 * `--reference`: the zero-setup demo. Provisions tokens with the reference CLI (a child process, never an import
 * of the server's code) in a fresh SQLite store in a temp dir, serves on a free port, and stops it afterwards.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { PACKAGE_ROOT, REPO_ROOT, type SuiteConfig } from './config.js'
import { ConfigError } from './types.js'
import { sleep } from './wait.js'

const run = promisify(execFile)
const KIT = 'agentops-contract-kit'

/**
 * The reference server's root: the repository this suite is a workspace of, or the kit installed beside the
 * suite (`npm install agentops-contract-kit`). The suite never imports it; it runs its CLI as a child process.
 */
export function findReference(cwd = process.cwd()): string {
  const isKit = (dir: string) => {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }
      return pkg.name === KIT && existsSync(join(dir, 'bin', 'agentops.mjs'))
    } catch {
      return false
    }
  }
  if (isKit(REPO_ROOT)) return REPO_ROOT
  const require = createRequire(join(cwd, 'noop.js'))
  for (const from of [cwd, PACKAGE_ROOT]) {
    try {
      const dir = dirname(require.resolve(`${KIT}/package.json`, { paths: [from] }))
      if (isKit(dir)) return dir
    } catch {
      // not installed there
    }
  }
  throw new ConfigError(
    `--reference needs the reference server, the ${KIT} package, and it is not installed beside the suite. ` +
      `Install it next to agentops-conformance (npm install ${KIT}), or test your own deployment with --base-url URL --token TOKEN.`,
  )
}

/**
 * The stream's replay window the reference runs with (its default is 1000 messages per topic): small, so that
 * resuming from before more than it (the `gap` message, stream.protocol-messages) costs a few records, not a
 * thousand. Runs against the reference declare it (`stream.replayWindow`).
 */
export const REFERENCE_REPLAY_WINDOW = 20

export interface ReferenceServer {
  baseUrl: string
  /** The store the reference serves: `agentops keys ... --database-url` against it provisions more identities. */
  databaseUrl: string
  tokens: SuiteConfig['tokens']
  stop(): Promise<void>
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, host, () => {
      const address = s.address()
      const port = typeof address === 'object' && address ? address.port : 0
      s.close(() => resolve(port))
    })
  })
}

async function keysCreate(kit: string, databaseUrl: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(
      process.execPath,
      [join(kit, 'bin', 'agentops.mjs'), 'keys', 'create', ...args, '--json', '--database-url', databaseUrl],
      {
        cwd: kit,
        timeout: 60_000,
      },
    )
    const token = (JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { token?: string }).token
    if (!token) throw new Error(`no token in ${stdout}`)
    return token
  } catch (err) {
    throw new ConfigError(
      `reference: agentops keys create ${args.join(' ')} failed: ${(err as Error).message}`,
    )
  }
}

/**
 * Room for many runs in the reference's conformance workspaces: the mutation run sends some 170 suite runs through
 * one provisioning within the hour, and each leaves tools, webhooks and agents behind. Enterprise limits (the pro
 * tier's 10,000 requests an hour ran out before its last dialects) and quotas no run reaches.
 */
const UNREACHED_QUOTAS = [
  '--quota',
  'agents=1000000000,tools=1000000000,webhooks=1000000000,destinations=1000000000,idempotency_keys=1000000000',
]
const ROOM_FOR_MANY_RUNS = [
  '--tier',
  'enterprise',
  '--limit-per-hour',
  '1000000',
  '--burst-limit',
  '100000',
  ...UNREACHED_QUOTAS,
]

/**
 * The second workspace's scopes: every resource family of the reference's contract as a wildcard (`agents:*`, ...)
 * rather than the primary's `*`, so every request of the second workspace goes through the reference's wildcard
 * form of a scope (the tenancy checks' 404s become 403s where it covers too little).
 */
const EVERY_FAMILY = [
  'agents',
  'tasks',
  'runs',
  'tools',
  'ingest',
  'records',
  'webhooks',
  'destinations',
  'stream',
]
  .map((family) => `${family}:*`)
  .join(',')

/** Ten years: an expiry still ahead whenever a run sends the key (a key refused before its expiry fails then). */
const FAR_EXPIRY_SECONDS = String(10 * 365 * 24 * 3600)

/**
 * The keys the suite asks for, as `agentops keys create` arguments, in the order startReference reads them back, in
 * workspaces named `<workspacePrefix>-primary`, `-second` and `-limited` (the mutation run's switch runner issues
 * the same identities into fresh workspaces for each run).
 */
export function keyRequests(
  workspacePrefix = 'conformance',
  // AGENTOPS_CONFORMANCE_REFERENCE_PRIMARY_TIER=standard gives the primary identity the standard tier's quota
  // (1,000 an hour, the reference's burst window), which shows the suite pacing itself on the rate-limit headers.
  primaryTier = process.env.AGENTOPS_CONFORMANCE_REFERENCE_PRIMARY_TIER,
): string[][] {
  const primary = `${workspacePrefix}-primary`
  const limited = `${workspacePrefix}-limited`
  return [
    primaryTier
      ? ['--workspace', primary, '--tier', primaryTier, ...UNREACHED_QUOTAS]
      : ['--workspace', primary, ...ROOM_FOR_MANY_RUNS],
    // Second, so that its one second has passed by the time auth.expired-token-401 sends it (issued last, it was
    // often still valid then, and the check waited for it to expire).
    ['--workspace', primary, '--expires-in', '1'],
    ['--workspace', `${workspacePrefix}-second`, ...ROOM_FOR_MANY_RUNS, '--scopes', EVERY_FAMILY],
    // With an expiry ten years ahead: a key whose expiry is still to come is accepted (its 403s stay 403s).
    ['--workspace', primary, '--scopes', 'agents:read', '--expires-in', FAR_EXPIRY_SECONDS],
    // Scopes without the narrow token's agents:read: refused 403 on the agent reads the narrow token may call. A
    // wildcard (tasks:*), which must not reach beyond its family.
    ['--workspace', primary, '--scopes', 'tasks:*'],
    // The peer joins the small-limit workspace once that exists with its limits (the requests run in order).
    ['--workspace', limited, '--limit-per-hour', '1000', '--burst-limit', '5'],
    ['--workspace', limited],
    // May start runs and nothing else: the policy gate refuses its run a tool that requires another scope.
    ['--workspace', primary, '--scopes', 'runs:write'],
    // Revoked as soon as it is issued (auth.revoked-token-401).
    ['--workspace', primary, '--revoked'],
  ]
}

/**
 * Issues every key in ONE child process that runs the kit's own CLI entry (`agentops keys create ...`) once per key,
 * instead of one process per key: each process pays Node's start and the store's opening, which on a busy
 * 2-core machine was most of the reference's start. `onFirst` fires once the first key exists (the store is
 * migrated), so the server can start while the others are issued. Falls back to a process per key when the kit has
 * no such entry module.
 */
async function issueKeys(
  kit: string,
  databaseUrl: string,
  requests: string[][],
  onFirst: () => void,
): Promise<string[]> {
  // The compiled CLI the server itself runs (bin/agentops.mjs runs dist/); a checkout without a build falls back to
  // the TypeScript source through tsx, which compiles the CLI's modules on every start.
  const compiled = join(kit, 'dist', 'src', 'cli', 'main.js')
  const source = join(kit, 'src', 'cli', 'main.ts')
  const entry = existsSync(compiled) ? compiled : source
  const args = requests.map((r) => ['keys', 'create', ...r, '--json', '--database-url', databaseUrl])
  if (!existsSync(entry)) {
    const first = await keysCreate(kit, databaseUrl, requests[0] ?? [])
    onFirst()
    const rest: string[] = []
    for (const r of requests.slice(1)) rest.push(await keysCreate(kit, databaseUrl, r))
    return [first, ...rest]
  }
  const script = [
    ...(entry === source ? ["import { register } from 'tsx/esm/api'", 'register()'] : []),
    'const { main } = await import(process.argv[1])',
    'for (const args of JSON.parse(process.argv[2])) {',
    '  const code = await main(args)',
    '  if (code !== 0) process.exit(code)',
    '}',
  ].join('\n')
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', script, pathToFileURL(entry).href, JSON.stringify(args)],
    {
      cwd: kit,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const tokens: string[] = []
  let pending = ''
  let errors = ''
  child.stdout?.on('data', (d: Buffer) => {
    pending += d.toString()
    for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
      const line = pending.slice(0, i).trim()
      pending = pending.slice(i + 1)
      if (!line.startsWith('{')) continue
      const token = (JSON.parse(line) as { token?: string }).token
      if (token) tokens.push(token)
      if (tokens.length === 1) onFirst()
    }
  })
  child.stderr?.on('data', (d: Buffer) => {
    errors = (errors + d.toString()).slice(-4000)
  })
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.once('exit', (c) => {
      clearTimeout(timer)
      resolve(c)
    })
  })
  if (code !== 0 || tokens.length !== requests.length)
    throw new ConfigError(
      `reference: agentops keys create issued ${tokens.length} of ${requests.length} keys (exit ${code}): ${errors.trim()}`,
    )
  return tokens
}

/**
 * `whileIssuing` runs once the key-issuing child process has been spawned, before the suite waits on it: work of
 * the suite's own (compiling the contract) then overlaps the reference's start instead of preceding it.
 */
export async function startReference(
  log: (line: string) => void,
  whileIssuing?: () => void,
  options: {
    port?: number
    /** The suite's webhook receiver as `host:port`: the one private target the reference may deliver to. */
    receiverTarget?: string
  } = {},
): Promise<ReferenceServer> {
  const started = Date.now()
  const kit = findReference()
  // A fixed port (--reference-port, for a runner whose firewall opens only some) or any free one.
  const port = options.port || (await freePort())
  // Made only once nothing before the server's start can fail without removing it: `--reference` without the kit
  // beside the suite had left one empty directory per run.
  const dir = mkdtempSync(join(tmpdir(), 'agentops-conformance-'))
  // AGENTOPS_CONFORMANCE_REFERENCE_DATABASE_URL runs the reference on another (empty) store, e.g. PostgreSQL.
  const databaseUrl =
    process.env.AGENTOPS_CONFORMANCE_REFERENCE_DATABASE_URL || `sqlite:${join(dir, 'db.sqlite')}`
  // The first key migrates the store; the server then starts while the other keys are issued.
  let serve: () => void = () => {}
  const migrated = new Promise<void>((resolve) => {
    serve = resolve
  })
  const provisioned = issueKeys(kit, databaseUrl, keyRequests(), () => serve())
  try {
    whileIssuing?.()
    await Promise.race([migrated, provisioned])
  } catch (err) {
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  const child: ChildProcess = spawn(
    process.execPath,
    [
      join(kit, 'bin', 'agentops.mjs'),
      'serve',
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--database-url',
      databaseUrl,
    ],
    {
      cwd: kit,
      // Retries after 0.5 s, 1 s... (full jitter) instead of 5 s, 10 s, found by an outbox that looks for due ones
      // every 250 ms instead of every second: the retry checks see three attempts within about 2 s, not 5.
      // A stream heartbeat every second instead of 15 s: stream.protocol-messages sees one within its wait.
      env: {
        AGENTOPS_WEBHOOK_RETRY_BASE_MS: '500',
        AGENTOPS_WEBHOOK_POLL_MS: '250',
        AGENTOPS_STREAM_HEARTBEAT_MS: '1000',
        AGENTOPS_STREAM_MAX_REPLAY: String(REFERENCE_REPLAY_WINDOW),
        ...process.env,
        ...(options.receiverTarget
          ? {
              AGENTOPS_WEBHOOK_PRIVATE_TARGETS: options.receiverTarget,
              AGENTOPS_DESTINATION_PRIVATE_TARGETS: options.receiverTarget,
              // The suite's receiver stands in for an http tool's endpoint too (tools.provider-calls).
              AGENTOPS_TOOL_PRIVATE_TARGETS: options.receiverTarget,
            }
          : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  // A failed provisioning must not leave the server running, and is the reason the start failed: the wait below
  // reports it instead of waiting out its deadline for a server it killed.
  let provisioningFailed: unknown
  provisioned.catch((err: unknown) => {
    provisioningFailed = err ?? new ConfigError('reference: issuing the keys failed')
    child.kill('SIGTERM')
  })
  let output = ''
  // AGENTOPS_CONFORMANCE_REFERENCE_LOG=FILE keeps the server's own output for diagnosis.
  const logFile = process.env.AGENTOPS_CONFORMANCE_REFERENCE_LOG
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000)
    if (logFile) appendFileSync(logFile, d)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  const baseUrl = `http://127.0.0.1:${port}`
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.kill('SIGTERM')
      // The grace period's timer must not outlive a server that exited at once: a pending 5 s timer kept the
      // suite's process alive that long after its verdict.
      let grace: NodeJS.Timeout | undefined
      await Promise.race([exited, new Promise<void>((resolve) => (grace = setTimeout(resolve, 5000)))])
      clearTimeout(grace)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    rmSync(dir, { recursive: true, force: true })
  }
  // Generous: on a loaded machine the server starts alongside the key provisioning processes.
  const deadline = Date.now() + 90_000
  for (;;) {
    if (provisioningFailed !== undefined) {
      await stop()
      throw provisioningFailed
    }
    // A signal leaves exitCode null: without signalCode a killed server was waited on for the whole deadline.
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop()
      throw new ConfigError(
        `reference: the server exited with ${child.exitCode ?? child.signalCode}:\n${output.slice(-2000)}`,
      )
    }
    try {
      const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) })
      if (res.ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop()
      throw new ConfigError(
        `reference: the server did not answer /healthz within 90 s:\n${output.slice(-2000)}`,
      )
    }
    await sleep(100)
  }
  let tokens: SuiteConfig['tokens']
  try {
    const [
      primary,
      expired,
      secondWorkspace,
      narrowScope,
      otherScope,
      rateLimited,
      rateLimitedPeer,
      runsOnly,
      revoked,
    ] = await provisioned
    tokens = {
      primary: primary!,
      secondWorkspace,
      narrowScope,
      otherScope,
      runsOnly,
      rateLimited,
      rateLimitedPeer,
      expired,
      revoked,
    }
  } catch (err) {
    await stop()
    throw err
  }
  log(
    `reference: ${kit} on store ${databaseUrl} serving at ${baseUrl} (pid ${child.pid}) with ${Object.keys(tokens).length} tokens, ready ${Date.now() - started} ms after start`,
  )
  return { baseUrl, databaseUrl, tokens, stop }
}
