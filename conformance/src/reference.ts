/**
 * `--reference`: the zero-setup demo. Provisions tokens with the reference CLI (a child process, never an import
 * of the server's code) in a fresh SQLite store in a temp dir, serves on a free port, and stops it afterwards.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { PACKAGE_ROOT, REPO_ROOT, type SuiteConfig } from './config.js'
import { freePort } from './ports.js'
import { provisionedTokens } from './provision.js'
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
/**
 * The attempts the reference server gives a webhook delivery when the suite starts it (AGENTOPS_WEBHOOK_MAX_ATTEMPTS;
 * 8 by default, over a minute at the suite's quick backoff): four attempts end within a few seconds, and the retry
 * checks need three. Runs against the reference declare it (`webhooks.maxAttempts`).
 */
export const REFERENCE_WEBHOOK_MAX_ATTEMPTS = 4

/**
 * The settings the reference server runs with under the suite (`--reference`, and the project's own whole-suite runs
 * of it): retries after 0.5 s, 1 s... (full jitter) instead of 5 s, 10 s, found by an outbox that looks for due ones
 * every 250 ms instead of every second, so the retry checks see three attempts within about 2 s, not 5; a stream
 * heartbeat every second instead of 15 s, so stream.protocol-messages sees one within its wait; and the attempts and
 * replay window above, which such a run declares.
 */
export const REFERENCE_SUITE_SETTINGS = {
  AGENTOPS_WEBHOOK_RETRY_BASE_MS: '500',
  AGENTOPS_WEBHOOK_POLL_MS: '250',
  AGENTOPS_WEBHOOK_MAX_ATTEMPTS: String(REFERENCE_WEBHOOK_MAX_ATTEMPTS),
  AGENTOPS_STREAM_HEARTBEAT_MS: '1000',
  AGENTOPS_STREAM_MAX_REPLAY: String(REFERENCE_REPLAY_WINDOW),
} as const

/**
 * A receiver's `127.0.0.1:PORT` and the same port by the name `localhost`: a listed name is resolved at each attempt,
 * so webhooks.listed-name-resolved sees the deliveries go through the name's resolution. Another host is kept as is.
 */
export function withLocalhost(target: string): string {
  const port = /^127\.0\.0\.1:(\d+)$/.exec(target)?.[1]
  return port ? `${target},localhost:${port}` : target
}

export interface ReferenceServer {
  baseUrl: string
  /** The store the reference serves: `agentops keys ... --database-url` against it provisions more identities. */
  databaseUrl: string
  tokens: SuiteConfig['tokens']
  /** The reference's revoke command on that store (`--revoke`): `agentops keys revoke --token-stdin`. */
  revoke: string
  /** The reference's short-lived key command on that store (`--issue-expiring`): `agentops keys create --token-stdin`. */
  issueExpiring: string
  /** Where its chat messages and incidents link a run (the config file's `destinations.runLink`). */
  runLink: string
  /** A fresh revocable token: for each further run against this server, the last one's being revoked. */
  issueRevocable(): Promise<string>
  stop(): Promise<void>
}

/**
 * The server answering at the port is the one just started: its store knows the key issued for it. Another server
 * that held the port (ours then failed to bind it) answered /healthz as well, and would fail every check after.
 */
async function answeredByOurs(baseUrl: string, token: string, exited: () => boolean): Promise<void> {
  const res = await fetch(`${baseUrl}/v1/agents?limit=1`, {
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(10_000),
  })
  await res.arrayBuffer()
  if (res.status !== 401 && !exited()) return
  throw new ConfigError(
    `reference: another server answers at ${baseUrl} (it refused the key issued for the reference with ${res.status}${exited() ? ', and the reference exited: the port was taken' : ''})`,
  )
}

/** The reference's identities are issued into workspaces named after this (`conformance-primary`, ...). */
const REFERENCE_WORKSPACE_PREFIX = 'conformance'

/**
 * The arguments of the reference's provisioning command, `agentops keys provision-conformance`: the kit's CLI holds
 * the one list of the suite's identities, issued into workspaces named `<workspacePrefix>-primary`, `-second` and
 * `-limited` (the mutation run's switch runner issues them into fresh workspaces for each run).
 */
export function provisionArgs(
  workspacePrefix = REFERENCE_WORKSPACE_PREFIX,
  // AGENTOPS_CONFORMANCE_REFERENCE_PRIMARY_TIER=standard gives the primary identity the standard tier's rate limit
  // (1,000 an hour, the reference's burst window), which shows the suite pacing itself on the rate-limit headers.
  primaryTier = process.env.AGENTOPS_CONFORMANCE_REFERENCE_PRIMARY_TIER,
): string[] {
  return [
    'keys',
    'provision-conformance',
    '--workspace-prefix',
    workspacePrefix,
    ...(primaryTier ? ['--primary-tier', primaryTier] : []),
  ]
}

/**
 * The reference's side of the suite's revoke command (`--revoke`, src/revoke.ts) as one shell command line: the kit's
 * CLI revoking the key of the token on its standard input, on the store at `databaseUrl`.
 */
export function revokeCommand(kit: string, databaseUrl: string): string {
  return kitCommandLine(kit, databaseUrl, ['keys', 'revoke', '--token-stdin'])
}

/** How long the reference's short-lived keys live: long enough to open connections, short enough not to hold a run. */
const SHORT_LIFE_SECONDS = 5

/**
 * The reference's side of the suite's short-lived key command (`--issue-expiring`, src/issue-expiring.ts) as one
 * shell command line: the kit's CLI issuing a key like the token on its standard input's, expiring in a few seconds.
 */
export function issueExpiringCommand(kit: string, databaseUrl: string): string {
  return kitCommandLine(kit, databaseUrl, [
    'keys',
    'create',
    '--token-stdin',
    '--expires-in',
    String(SHORT_LIFE_SECONDS),
    '--json',
  ])
}

/** The kit's CLI (`agentops ARGS`) on the store at `databaseUrl`, as one shell command line. */
function kitCommandLine(kit: string, databaseUrl: string, args: readonly string[]): string {
  return shellLine([
    process.execPath,
    join(kit, 'bin', 'agentops.mjs'),
    ...args,
    '--database-url',
    databaseUrl,
  ])
}

/**
 * Where the reference's chat messages and incidents link a run, given its `AGENTOPS_PUBLIC_URL`: what a run of the
 * suite against it declares as `destinations.runLink`.
 */
export function referenceRunLink(publicUrl: string): string {
  return `${publicUrl}/v1/runs/{run_id}`
}

/** Words as one POSIX shell command line, each single-quoted (a command setting such as `--revoke` takes one). */
export function shellLine(words: readonly string[]): string {
  return words.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ')
}

/**
 * What the kit's own CLI entry printed for `args` (`agentops ...`), run in one child process. The compiled CLI the
 * server itself runs (bin/agentops.mjs runs dist/); a checkout without a build falls back to the TypeScript source
 * through tsx, which compiles the CLI's modules on every start. `fail` makes the error naming the command.
 */
async function kitCli(kit: string, args: string[], fail: (what: string) => Error): Promise<string> {
  const compiled = join(kit, 'dist', 'src', 'cli', 'main.js')
  const source = join(kit, 'src', 'cli', 'main.ts')
  const entry = existsSync(compiled) ? compiled : source
  const script = [
    ...(entry === source ? ["import { register } from 'tsx/esm/api'", 'register()'] : []),
    'const { main } = await import(process.argv[1])',
    'process.exitCode = await main(JSON.parse(process.argv[2]))',
  ].join('\n')
  try {
    const { stdout } = await run(
      process.execPath,
      ['--input-type=module', '-e', script, pathToFileURL(entry).href, JSON.stringify(args)],
      { cwd: kit, timeout: 60_000 },
    )
    return stdout
  } catch (err) {
    const { stderr, message } = err as { stderr?: string; message: string }
    throw fail(`failed: ${(stderr?.trim() || message).slice(-2000)}`)
  }
}

/** Issues the suite's identities with the kit's CLI. */
async function provisionReference(kit: string, databaseUrl: string): Promise<SuiteConfig['tokens']> {
  const args = [...provisionArgs(), '--database-url', databaseUrl]
  const fail = (what: string) => new ConfigError(`reference: agentops ${args.join(' ')} ${what}`)
  return provisionedTokens(await kitCli(kit, args, fail), fail)
}

/**
 * A new key of the provisioned primary workspace with the kit's CLI (`agentops keys create`): a revocable token for
 * another run against the same server, the last one's having been revoked by it.
 */
async function issueRevocable(kit: string, databaseUrl: string): Promise<string> {
  const workspace = `${REFERENCE_WORKSPACE_PREFIX}-primary`
  const args = ['keys', 'create', '--workspace', workspace, '--json', '--database-url', databaseUrl]
  const fail = (what: string) => new ConfigError(`reference: agentops ${args.join(' ')} ${what}`)
  const stdout = await kitCli(kit, args, fail)
  const token = (JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { token?: unknown }).token
  if (typeof token !== 'string') throw fail(`printed no token: ${stdout.slice(-500)}`)
  return token
}

/**
 * `whileIssuing` runs once the key-issuing child process and the server have been spawned, before the suite waits
 * on them: work of the suite's own (compiling the contract) then overlaps the reference's start instead of
 * preceding it. The server starts alongside the provisioning: whichever opens the new store first migrates it, the
 * other finds it migrated (migrations take the store's write lock).
 */
export async function startReference(
  log: (line: string) => void,
  whileIssuing?: () => void,
  options: {
    port?: number
    /** The suite's webhook receiver as `host:port`: the one private target the reference may deliver to. */
    receiverTarget?: string
    /** A NATS server's `host:port` (`--nats-url`), a private target its nats destinations may publish to. */
    natsTarget?: string
  } = {},
): Promise<ReferenceServer> {
  const started = Date.now()
  const kit = findReference()
  // A fixed port (--reference-port, for a runner whose firewall opens only some) or any free one.
  const port = options.port || (await freePort())
  const baseUrl = `http://127.0.0.1:${port}`
  // Made only once nothing before the server's start can fail without removing it: `--reference` without the kit
  // beside the suite had left one empty directory per run.
  const dir = mkdtempSync(join(tmpdir(), 'agentops-conformance-'))
  // AGENTOPS_CONFORMANCE_REFERENCE_DATABASE_URL runs the reference on another (empty) store, e.g. PostgreSQL.
  const databaseUrl =
    process.env.AGENTOPS_CONFORMANCE_REFERENCE_DATABASE_URL || `sqlite:${join(dir, 'db.sqlite')}`
  const provisioned = provisionReference(kit, databaseUrl)
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
      env: {
        ...REFERENCE_SUITE_SETTINGS,
        ...process.env,
        // Its own address as the public URL its chat messages and incidents link runs to (runLink below).
        AGENTOPS_PUBLIC_URL: baseUrl,
        ...(options.receiverTarget
          ? {
              // The receiver by the name localhost too, on its port only (webhooks.listed-name-resolved).
              AGENTOPS_WEBHOOK_PRIVATE_TARGETS: withLocalhost(options.receiverTarget),
              AGENTOPS_DESTINATION_PRIVATE_TARGETS: [options.receiverTarget, options.natsTarget]
                .filter((t) => t !== undefined)
                .join(','),
              // The suite's receiver stands in for an http tool's endpoint too (tools.provider-calls).
              AGENTOPS_TOOL_PRIVATE_TARGETS: options.receiverTarget,
            }
          : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  whileIssuing?.()
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
    tokens = await provisioned
    await answeredByOurs(baseUrl, tokens.primary, () => child.exitCode !== null || child.signalCode !== null)
  } catch (err) {
    await stop()
    throw err
  }
  log(
    `reference: ${kit} on store ${databaseUrl} serving at ${baseUrl} (pid ${child.pid}) with ${Object.keys(tokens).length} tokens, ready ${Date.now() - started} ms after start`,
  )
  return {
    baseUrl,
    databaseUrl,
    tokens,
    revoke: revokeCommand(kit, databaseUrl),
    issueExpiring: issueExpiringCommand(kit, databaseUrl),
    runLink: referenceRunLink(baseUrl),
    issueRevocable: () => issueRevocable(kit, databaseUrl),
    stop,
  }
}
