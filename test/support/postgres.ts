/**
 * One way to get a PostgreSQL server for tests: a testcontainers container when a container engine answers,
 * otherwise a throwaway cluster from the machine's own PostgreSQL binaries (Debian's `postgresql` package).
 * Both paths end in the same place — a connection URL — and every test uses only that URL.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { testPort } from './ports.js'

export interface PostgresServer {
  /** Admin URL of the server (database `postgres`). */
  url: string
  via: 'testcontainers' | 'local-binaries'
  stop(): Promise<void>
}

export async function startPostgres(): Promise<PostgresServer> {
  const fromContainer = await tryTestcontainers()
  if (fromContainer) return fromContainer
  return startLocalCluster()
}

async function tryTestcontainers(): Promise<PostgresServer | null> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers')
    await getContainerRuntimeClient()
  } catch {
    return null // no engine: fall back to local binaries
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql')
  const container = await new PostgreSqlContainer('postgres:16-alpine').start()
  return {
    url: container.getConnectionUri(),
    via: 'testcontainers',
    stop: async () => {
      await container.stop()
    },
  }
}

function findBinDir(): string | null {
  const onPath = spawnSync('sh', ['-c', 'command -v pg_ctl'], { encoding: 'utf8' }).stdout.trim()
  const candidates: string[] = []
  if (existsSync('/usr/lib/postgresql')) {
    for (const v of readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))) {
      candidates.push(`/usr/lib/postgresql/${v}/bin`)
    }
  }
  if (onPath) candidates.push(onPath.replace(/\/pg_ctl$/, ''))
  return candidates.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) ?? null
}

async function startLocalCluster(): Promise<PostgresServer> {
  const bin = findBinDir()
  if (!bin) {
    throw new Error(
      'No container engine and no PostgreSQL binaries: install them with `apt-get install -y postgresql` (what .ci/run does)',
    )
  }
  const dir = mkdtempSync(join(tmpdir(), 'agentops-pg-'))
  chmodSync(dir, 0o777)
  const data = join(dir, 'data')
  const port = await testPort()
  // PostgreSQL refuses to run as root; run it as the `postgres` account the Debian package creates.
  const asRoot = process.getuid?.() === 0
  const run = (cmd: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { stdio: 'pipe' })
      : execFileSync(join(bin, cmd), args, { stdio: 'pipe' })
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'])
  run('pg_ctl', [
    '-D',
    data,
    '-l',
    join(dir, 'log'),
    '-w',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200`,
    'start',
  ])
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    via: 'local-binaries',
    stop: async () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  }
}

/** A fresh, empty database on the server, so test files never see each other's rows. */
export async function createDatabase(adminUrl: string): Promise<string> {
  const name = `agentops_test_${Math.random().toString(36).slice(2, 10)}`
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`)
  } finally {
    await sql.end()
  }
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}
