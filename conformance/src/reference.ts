/**
 * `--reference`: the zero-setup demo. Provisions tokens with the reference CLI (a child process, never an import
 * of the server's code) in a fresh SQLite store in a temp dir, serves on a free port, and stops it afterwards.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { REPO_ROOT, type SuiteConfig } from './config.js'
import { ConfigError } from './types.js'
import { sleep } from './wait.js'

const run = promisify(execFile)
const CLI = join(REPO_ROOT, 'bin', 'agentops.mjs')

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

async function keysCreate(databaseUrl: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(
      process.execPath,
      [CLI, 'keys', 'create', ...args, '--json', '--database-url', databaseUrl],
      {
        cwd: REPO_ROOT,
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
  // The first call migrates the store; the others can then run side by side.
  const primary = await keysCreate(databaseUrl, [
    '--workspace',
    'conformance-primary',
    '--tier',
    'enterprise',
    '--limit-per-hour',
    '1000000',
    '--burst-limit',
    '100000',
  ])
  const [secondWorkspace, narrowScope, rateLimited, expired] = await Promise.all([
    keysCreate(databaseUrl, ['--workspace', 'conformance-second', '--tier', 'pro']),
    keysCreate(databaseUrl, ['--workspace', 'conformance-primary', '--scopes', 'agents:read']),
    keysCreate(databaseUrl, [
      '--workspace',
      'conformance-limited',
      '--limit-per-hour',
      '1000',
      '--burst-limit',
      '5',
    ]),
    keysCreate(databaseUrl, ['--workspace', 'conformance-primary', '--expires-in', '1']),
  ])
  const rateLimitedPeer = await keysCreate(databaseUrl, ['--workspace', 'conformance-limited'])
  log(`reference: store ${databaseUrl}, 6 tokens provisioned in ${Date.now() - started} ms`)

  const port = await freePort()
  const child: ChildProcess = spawn(
    process.execPath,
    [CLI, 'serve', '--port', String(port), '--host', '127.0.0.1', '--database-url', databaseUrl],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, AGENTOPS_ALLOW_PRIVATE_WEBHOOKS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
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
  const deadline = Date.now() + 30_000
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
        `reference: the server did not answer /healthz within 30 s:\n${output.slice(-2000)}`,
      )
    }
    await sleep(100)
  }
  log(`reference: serving at ${baseUrl} (pid ${child.pid}), ready ${Date.now() - started} ms after start`)
  return {
    baseUrl,
    tokens: { primary, secondWorkspace, narrowScope, rateLimited, rateLimitedPeer, expired },
    stop,
  }
}
