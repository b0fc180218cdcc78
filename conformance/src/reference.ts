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

export interface ReferenceServer {
  baseUrl: string
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

export async function startReference(log: (line: string) => void): Promise<ReferenceServer> {
  const dir = mkdtempSync(join(tmpdir(), 'agentops-conformance-'))
  // AGENTOPS_CONFORMANCE_REFERENCE_DATABASE_URL runs the reference on another (empty) store, e.g. PostgreSQL.
  const databaseUrl =
    process.env.AGENTOPS_CONFORMANCE_REFERENCE_DATABASE_URL || `sqlite:${join(dir, 'db.sqlite')}`
  const started = Date.now()
  const kit = findReference()
  const keys = (args: string[]) => keysCreate(kit, databaseUrl, args)
  // AGENTOPS_CONFORMANCE_REFERENCE_PRIMARY_TIER=standard gives the primary identity the standard tier's quota
  // (1,000 an hour, the reference's burst window), which shows the suite pacing itself on the rate-limit headers.
  const primaryTier = process.env.AGENTOPS_CONFORMANCE_REFERENCE_PRIMARY_TIER
  // The first call migrates the store; the others, and the server, can then start side by side.
  const primary = await keys(
    primaryTier
      ? ['--workspace', 'conformance-primary', '--tier', primaryTier]
      : [
          '--workspace',
          'conformance-primary',
          '--tier',
          'enterprise',
          '--limit-per-hour',
          '1000000',
          '--burst-limit',
          '100000',
        ],
  )
  const port = await freePort()
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
      // Retries after 1 s, 2 s... (full jitter) instead of 5 s, 10 s: the retry checks see three attempts quickly.
      env: { AGENTOPS_WEBHOOK_RETRY_BASE_MS: '1000', ...process.env, AGENTOPS_ALLOW_PRIVATE_WEBHOOKS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const provisioned = Promise.all([
    keys(['--workspace', 'conformance-second', '--tier', 'pro']),
    keys(['--workspace', 'conformance-primary', '--scopes', 'agents:read']),
    // The peer joins the small-limit workspace only once that exists with its limits.
    keys(['--workspace', 'conformance-limited', '--limit-per-hour', '1000', '--burst-limit', '5']).then(
      async (limited) => [limited, await keys(['--workspace', 'conformance-limited'])] as const,
    ),
    keys(['--workspace', 'conformance-primary', '--expires-in', '1']),
  ])
  // A failed provisioning must not leave the server running.
  provisioned.catch(() => child.kill('SIGTERM'))
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
      await Promise.race([exited, sleep(5000)])
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    rmSync(dir, { recursive: true, force: true })
  }
  // Generous: on a loaded machine the server starts alongside the key provisioning processes.
  const deadline = Date.now() + 90_000
  for (;;) {
    if (child.exitCode !== null) {
      await stop()
      throw new ConfigError(`reference: the server exited with ${child.exitCode}:\n${output.slice(-2000)}`)
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
    const [secondWorkspace, narrowScope, [rateLimited, rateLimitedPeer], expired] = await provisioned
    tokens = { primary, secondWorkspace, narrowScope, rateLimited, rateLimitedPeer, expired }
  } catch (err) {
    await stop()
    throw err
  }
  log(
    `reference: ${kit} on store ${databaseUrl} serving at ${baseUrl} (pid ${child.pid}) with 6 tokens, ready ${Date.now() - started} ms after start`,
  )
  return { baseUrl, tokens, stop }
}
