/**
 * `/readyz` against `/healthz`: not ready while the store is migrated, while it does not answer, and from the first
 * moment of a graceful shutdown (while requests in progress still finish).
 */
import { connect } from 'node:net'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { startServer } from '../../src/server.js'
import type { Db } from '../../src/store/db.js'
import { openDb } from '../../src/store/open.js'
import { listenPort, testPort } from '../support/ports.js'
import { testTempDir } from '../support/temp.js'

const sqliteUrl = () => `sqlite:${join(testTempDir('readyz-'), 'db.sqlite')}`

/** The real store with two of its methods wrapped; every other member is the store's own, bound to it. */
function wrapped(db: Db, overrides: Partial<Pick<Db, 'exec' | 'one'>>): Db {
  return new Proxy(db, {
    get(target, name) {
      if (name === 'exec' && overrides.exec) return overrides.exec
      if (name === 'one' && overrides.one) return overrides.one
      const value = Reflect.get(target, name, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

async function readyz(url: string): Promise<{ status: number; body: { status: string } }> {
  const res = await fetch(`${url}/readyz`)
  return { status: res.status, body: (await res.json()) as { status: string } }
}

async function until<T>(probe: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = await probe().catch(() => undefined)
    if (v !== undefined && done(v)) return v
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error('condition not reached within 5 s')
}

describe('/readyz', () => {
  it('is 503 "migrating" until the store is migrated; the API answers a retryable 503 meanwhile', async () => {
    const db = await openDb(sqliteUrl())
    let release!: () => void
    const gate = new Promise<void>((r) => {
      release = r
    })
    const held = wrapped(db, {
      exec: async (script) => {
        await gate
        return db.exec(script)
      },
    })
    const port = await testPort()
    const starting = startServer({ db: held, config: { port, host: '127.0.0.1' } })
    const url = `http://127.0.0.1:${port}`
    try {
      const before = await until(
        () => readyz(url),
        () => true,
      )
      expect(before).toEqual({ status: 503, body: { status: 'migrating' } })
      const api = await fetch(`${url}/v1/agents`)
      expect(api.status).toBe(503)
      expect(api.headers.get('retry-after')).toBe('1')
      expect(((await api.json()) as { error: { code: string } }).error.code).toBe('unavailable')
      release()
      const server = await starting
      expect(await readyz(url)).toEqual({ status: 200, body: { status: 'ready' } })
      await server.close()
    } finally {
      release()
      await db.close()
    }
  })

  it('is 503 "store_unreachable" while the store does not answer, and ready again once it does', async () => {
    const db = await openDb(sqliteUrl())
    let failing = false
    const flaky = wrapped(db, {
      one: (async (sql: string, params?: never[]) => {
        if (failing && sql.startsWith('SELECT 1')) throw new Error('connection refused')
        return db.one(sql, params)
      }) as Db['one'],
    })
    const server = await startServer({ db: flaky, config: { port: await listenPort(), host: '127.0.0.1' } })
    try {
      expect((await readyz(server.url)).status).toBe(200)
      failing = true
      expect(await readyz(server.url)).toEqual({ status: 503, body: { status: 'store_unreachable' } })
      failing = false
      expect((await readyz(server.url)).status).toBe(200)
    } finally {
      await server.close()
      await db.close()
    }
  })

  it('is 503 "shutting_down" from the first moment of a graceful shutdown, while a request still finishes', async () => {
    const server = await startServer({
      config: {
        port: await listenPort(),
        host: '127.0.0.1',
        databaseUrl: sqliteUrl(),
        metricsPort: await listenPort(),
        shutdownGraceMs: 5000,
      },
    })
    const { token } = await server.services.keyAdmin.issue({ workspace: 'readyz' })
    const metricsUrl = server.metricsUrl as string
    expect((await readyz(metricsUrl)).status).toBe(200)
    // A request whose body is still arriving holds the shutdown open.
    const body = JSON.stringify({ name: 'in-flight', behavior: 'autonomous' })
    const socket = connect(server.port, '127.0.0.1')
    let answer = ''
    socket.on('data', (d) => {
      answer += d.toString()
    })
    const socketClosed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
    socket.write(
      `POST /v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    )
    await until(
      async () => server.services.metrics?.http.inFlight ?? 0,
      (n) => n === 1,
    )
    const closing = server.close()
    expect(await readyz(metricsUrl)).toEqual({ status: 503, body: { status: 'shutting_down' } })
    socket.write(body.slice(10))
    await socketClosed
    expect(answer).toMatch(/^HTTP\/1\.1 201 Created/)
    await closing
  })
})
