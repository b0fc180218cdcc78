/**
 * One way to get a NATS server with JetStream for tests: a testcontainers container when a container engine
 * answers, otherwise the machine's own `nats-server` (Debian's package) on a free loopback port with a temporary
 * store directory. Both paths end in the same place — a `nats://` URL — and every test uses only that URL.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findNatsServer, listening } from '../../conformance/src/nats.js'
import { testPort } from './ports.js'

export interface NatsServer {
  /** `nats://127.0.0.1:<port>` (or the container's mapped address). */
  url: string
  via: 'testcontainers' | 'local-binary'
  /**
   * Kills the server with SIGKILL and starts it again on the same port and store (local binary only; a container
   * is restarted). For chaos tests: JetStream keeps what it acknowledged.
   */
  crash(): Promise<void>
  stop(): Promise<void>
}

export async function startNats(): Promise<NatsServer> {
  const fromContainer = await tryTestcontainers()
  if (fromContainer) return fromContainer
  return startLocalServer()
}

async function tryTestcontainers(): Promise<NatsServer | null> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers')
    await getContainerRuntimeClient()
  } catch {
    return null // no engine: fall back to the local binary
  }
  const { GenericContainer } = await import('testcontainers')
  const container = await new GenericContainer('nats:2.10-alpine')
    .withCommand(['-js', '-sd', '/data'])
    .withExposedPorts(4222)
    .start()
  return {
    url: `nats://${container.getHost()}:${container.getMappedPort(4222)}`,
    via: 'testcontainers',
    crash: async () => {
      await container.restart({ timeout: 0 })
    },
    stop: async () => {
      await container.stop()
    },
  }
}

/**
 * The machine's `nats-server` with JetStream and a store that outlives a crash, on a port that stays the same: the
 * binary is found, and waited for, as the conformance suite's own local server is (conformance/src/nats.ts), whose
 * authorised, store-less server these tests cannot use.
 */
async function startLocalServer(): Promise<NatsServer> {
  const bin = findNatsServer()
  if (!bin)
    throw new Error(
      'No container engine and no nats-server: install it with `apt-get install -y nats-server` (what .ci/run does)',
    )
  const dir = mkdtempSync(join(tmpdir(), 'agentops-nats-'))
  const port = await testPort()
  let child: ChildProcess
  const launch = async () => {
    child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], { stdio: 'ignore' })
    if (await listening(port, child, 10_000)) return
    if (child.exitCode !== null) throw new Error(`nats-server exited with ${child.exitCode}`)
    throw new Error(`nats-server did not listen on ${port} within 10 s`)
  }
  const end = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      child.once('exit', () => resolve())
      child.kill(signal)
    })
  await launch()
  return {
    url: `nats://127.0.0.1:${port}`,
    via: 'local-binary',
    crash: async () => {
      await end('SIGKILL')
      await launch()
    },
    stop: async () => {
      try {
        await end('SIGTERM')
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  }
}
