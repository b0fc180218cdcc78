import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'

const CHILD = fileURLToPath(new URL('../support/crash-once.ts', import.meta.url))

/** Runs the crashing child; resolves with how it ended once it did, and calls `onHolding` when it holds its key. */
function crashChild(args: string[], onHolding?: (kill: () => void) => void): Promise<string | number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let err = ''
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString()
    })
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('holding')) onHolding?.(() => child.kill('SIGKILL'))
    })
    child.once('error', reject)
    child.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child ended with ${code}: ${err}`))
      else resolve(signal ?? code)
    })
  })
}

describe.each(backends())(
  'a keyed request whose server is killed (-9) inside its work, on $name',
  (backend) => {
    let t: TestServer
    let url: string
    let token: string
    let workspaceId: string

    beforeAll(async () => {
      url = await backend.freshUrl()
      t = await startTestServer({ databaseUrl: url })
      const issued = await t.createKey()
      token = issued.token
      workspaceId = issued.workspace_id
    })
    afterAll(() => t.close())

    const post = (key: string) =>
      t.request('POST', '/v1/agents', {
        token,
        headers: { 'Idempotency-Key': key },
        body: { name: `crash-${key}`, behavior: 'autonomous' },
      })
    const agentsNamed = async (name: string) =>
      (
        await t.services.db.query('SELECT id FROM agents WHERE workspace_id = $1 AND name = $2', [
          workspaceId,
          name,
        ])
      ).length

    it('leaves neither the effect nor the key; the retry creates exactly one agent and replays it byte for byte', async () => {
      expect(await crashChild([url, workspaceId, 'k-die', 'die'])).toBe('SIGKILL')
      expect(await agentsNamed('crash-k-die')).toBe(0)
      expect(
        await t.services.db.one('SELECT * FROM idempotency_keys WHERE idem_key = $1', ['k-die']),
      ).toBeUndefined()

      const first = await post('k-die')
      expect(first.status).toBe(201)
      const replay = await post('k-die')
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(replay.text).toBe(first.text)
      expect(await agentsNamed('crash-k-die')).toBe(1)
    })

    it.skipIf(backend.name !== 'postgres')(
      'hands a dead replica’s claim over as soon as its connection is gone, not after a lease',
      async () => {
        let busy: Awaited<ReturnType<typeof post>> | undefined
        const ended = crashChild([url, workspaceId, 'k-hold', 'hold'], (kill) => {
          void post('k-hold').then((answer) => {
            busy = answer
            kill()
          })
        })
        expect(await ended).toBe('SIGKILL')
        expect(busy?.status).toBe(409)
        expect(busy?.body.error.code).toBe('idempotency_key_in_progress')
        // PostgreSQL ends the dead connection's transaction, and its lock with it, once it reads the closed socket:
        // a bounded wait for that, never a lease.
        let answer = await post('k-hold')
        for (let i = 0; i < 100 && answer.status === 409; i++) {
          await new Promise((r) => setTimeout(r, 50))
          answer = await post('k-hold')
        }
        expect(answer.status).toBe(201)
        expect(await agentsNamed('crash-k-hold')).toBe(1)
      },
    )
  },
)
