/**
 * The NATS server a `destinations.event-bus` run subscribes at (`--nats-url`): the declared URL read into what a
 * client dials and the credentials it dials with, and, for `--reference` and the mutation runs, a local
 * `nats-server` (Debian's package, as the kit's own tests start it) on a free loopback port with a token of its own.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { connect as tcpConnect } from 'node:net'
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
  /** `nats://TOKEN@127.0.0.1:PORT`, as `--nats-url` declares it. */
  url: string
  /** `127.0.0.1:PORT`: the reference's allowed private target for its nats destinations. */
  hostPort: string
  stop(): Promise<void>
}

/** Whether something accepts connections on the port (bounded: `ms`), or the process ended first. */
async function listening(port: number, child: ChildProcess, ms: number): Promise<boolean> {
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

/**
 * A `nats-server` of its own on 127.0.0.1 (a free port, a random token, no JetStream: the check answers the
 * publishes' acknowledgements itself), or null with the reason when there is no `nats-server` or it did not start.
 */
export async function startLocalNats(
  port: () => Promise<number>,
): Promise<{ nats: LocalNats } | { nats: null; reason: string }> {
  const bin = findNatsServer()
  if (!bin) return { nats: null, reason: 'no nats-server is installed (apt-get install nats-server)' }
  const token = randomBytes(12).toString('hex')
  const at = await port()
  const child = spawn(bin, ['-a', '127.0.0.1', '-p', String(at), '--auth', token], { stdio: 'ignore' })
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
  }
  if (!(await listening(at, child, 10_000))) {
    await stop()
    return { nats: null, reason: `nats-server (${bin}) did not listen on 127.0.0.1:${at} within 10 s` }
  }
  return { nats: { url: `nats://${token}@127.0.0.1:${at}`, hostPort: `127.0.0.1:${at}`, stop } }
}
