/**
 * The NATS server a `destinations.event-bus` run subscribes at (`--nats-url`): the declared URL read into what a
 * client dials and the credentials it dials with, and, for `--reference` and the mutation runs, a local
 * `nats-server` (Debian's package, as the kit's own tests start it) on a free loopback port with users of its own.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from './types.js'

/** A declared NATS URL as a client dials it: the server without credentials, and the credentials apart. */
export interface NatsTarget {
  /** `nats://host:port` (or `tls://`), the port 4222 when none is given. */
  server: string
  /** `host:port`, what a deployment's list of allowed private targets names. */
  hostPort: string
  /** `nats://TOKEN@host` */
  token?: string
  /** `nats://USER:PASSWORD@host` */
  user?: string
  password?: string
}

/** Reads `nats://[token@|user:password@]host[:port]` (or `tls://`); a wrong one is a ConfigError naming `where`. */
export function natsTarget(url: string, where = '--nats-url'): NatsTarget {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new ConfigError(`${where} is not a URL: "${url}"`)
  }
  if (parsed.protocol !== 'nats:' && parsed.protocol !== 'tls:')
    throw new ConfigError(`${where} must use nats: or tls:, e.g. nats://127.0.0.1:4222`)
  if (parsed.hostname === '' || (parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '')
    throw new ConfigError(`${where} must be nats://[token@|user:password@]host[:port]: "${url}"`)
  const port = parsed.port === '' ? '4222' : parsed.port
  const hostPort = `${parsed.hostname}:${port}`
  const user = decodeURIComponent(parsed.username)
  const password = decodeURIComponent(parsed.password)
  return {
    server: `${parsed.protocol}//${hostPort}`,
    hostPort,
    ...(user !== '' && password === '' ? { token: user } : {}),
    ...(user !== '' && password !== '' ? { user, password } : {}),
  }
}

/** The machine's `nats-server`, or null: on the PATH, else where Debian's package puts it. */
export function findNatsServer(): string | null {
  const onPath = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).stdout?.trim() ?? ''
  return (
    [onPath, '/usr/bin/nats-server', '/usr/sbin/nats-server'].find((p) => p !== '' && existsSync(p)) ?? null
  )
}

export interface LocalNats {
  /** `nats://USER:PASSWORD@127.0.0.1:PORT`, as `--nats-url` declares it. */
  url: string
  /** `127.0.0.1:PORT`: the reference's allowed private target for its nats destinations. */
  hostPort: string
  /** Another user's URL on the same server, once the server lets it in. */
  freshUrl(): Promise<string>
  stop(): Promise<void>
}

/**
 * Whether something accepts connections on the port of 127.0.0.1 (bounded: `ms`), or the process ended first. The
 * kit's own tests wait for their JetStream `nats-server` with it too (test/support/nats.ts).
 */
export async function listening(port: number, child: ChildProcess, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (
    Date.now() < deadline &&
    child.exitCode === null &&
    child.signalCode === null &&
    child.pid !== undefined
  ) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = tcpConnect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return true
    await new Promise((r) => setTimeout(r, 25))
  }
  return false
}

/** The server's configuration: loopback only, and each user a password of its own. */
function natsConfig(port: number, users: { user: string; password: string }[]): string {
  const list = users.map(
    (u) => `    { user: ${JSON.stringify(u.user)}, password: ${JSON.stringify(u.password)} }`,
  )
  return `listen: "127.0.0.1:${port}"\nauthorization {\n  users = [\n${list.join('\n')}\n  ]\n}\n`
}

/** Whether `url`'s credentials are let in (the server read its configuration again), tried until `ms` pass. */
async function admitted(url: string, ms: number): Promise<boolean> {
  const { connect } = await import('@nats-io/transport-node')
  const target = natsTarget(url)
  const deadline = Date.now() + ms
  do {
    try {
      const nc = await connect({
        servers: target.server,
        user: target.user,
        pass: target.password,
        timeout: 1000,
      })
      await nc.close()
      return true
    } catch {
      await new Promise((r) => setTimeout(r, 25))
    }
  } while (Date.now() < deadline)
  return false
}

/**
 * A `nats-server` of its own on 127.0.0.1 (a free port, users with random passwords, no JetStream: the check answers
 * the publishes' acknowledgements itself), or null with the reason when there is no `nats-server` or it did not
 * start. `freshUrl` adds a user (the server reloads its configuration) for a run whose destination must open a
 * connection of its own: a long-lived reference keeps one per server list and credentials.
 */
export async function startLocalNats(
  port: () => Promise<number>,
): Promise<{ nats: LocalNats } | { nats: null; reason: string }> {
  const bin = findNatsServer()
  if (!bin) return { nats: null, reason: 'no nats-server is installed (apt-get install nats-server)' }
  const at = await port()
  const dir = mkdtempSync(join(tmpdir(), 'agentops-conformance-nats-'))
  const file = join(dir, 'nats.conf')
  const users: { user: string; password: string }[] = []
  const addUser = () => {
    const user = { user: `conformance-${users.length + 1}`, password: randomBytes(12).toString('hex') }
    users.push(user)
    writeFileSync(file, natsConfig(at, users))
    return `nats://${user.user}:${user.password}@127.0.0.1:${at}`
  }
  const url = addUser()
  const child = spawn(bin, ['-c', file], { stdio: 'ignore' })
  let ended = false
  // A binary that could not be started emits 'error' and no 'exit'.
  const exited = new Promise<void>((resolve) => {
    const end = () => {
      ended = true
      resolve()
    }
    child.once('exit', end)
    child.once('error', end)
  })
  const stop = async () => {
    if (!ended) {
      child.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  if (!(await listening(at, child, 10_000))) {
    await stop()
    return { nats: null, reason: `nats-server (${bin}) did not listen on 127.0.0.1:${at} within 10 s` }
  }
  const freshUrl = async () => {
    const next = addUser()
    child.kill('SIGHUP')
    if (!(await admitted(next, 5000)))
      throw new Error(`nats-server did not let in ${natsTarget(next).user} within 5 s`)
    return next
  }
  return { nats: { url, hostPort: `127.0.0.1:${at}`, freshUrl, stop } }
}
