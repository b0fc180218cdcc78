/**
 * The JSON log (pino through sonic-boom on stdout) survives its reader going away: `agentops serve | some-shipper`
 * where the shipper exits. The server keeps serving (a dead log shipper must not take the service down), says so in
 * one line on stderr, raises no unhandled error, and still stops cleanly with 0 on SIGTERM.
 */
import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { testPort } from '../support/ports.js'
import { testTempDir } from '../support/temp.js'

const ROOT = resolve(import.meta.dirname, '../..')

describe('the JSON log when stdout closes', () => {
  it('keeps the server serving, says so once on stderr, and stops with 0', async () => {
    const port = await testPort()
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'bin/agentops.mjs'),
        'serve',
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        '--database-url',
        `sqlite:${join(testTempDir('log-epipe-'), 'db.sqlite')}`,
      ],
      // Info: every request writes a line, so the closed pipe is written to while requests go on.
      { env: { ...process.env, AGENTOPS_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stderr = ''
    child.stderr.on('data', (d) => {
      stderr += d
    })
    const exited = new Promise<number | string | null>((r) =>
      child.once('exit', (code, signal) => r(code ?? signal)),
    )
    try {
      // The reader takes the first line (the server's start), then goes away like a shipper that exits.
      const firstLine = await new Promise<string>((r, reject) => {
        let out = ''
        child.stdout.on('data', (d) => {
          out += d
          if (out.includes('\n')) r(out.slice(0, out.indexOf('\n')))
        })
        child.once('exit', () => reject(new Error(`the server ended before logging: ${stderr}`)))
      })
      expect(JSON.parse(firstLine)).toHaveProperty('level')
      const url = `http://127.0.0.1:${port}`
      for (let i = 0; ; i++) {
        const up = await fetch(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        )
        if (up) break
        if (i > 300 || child.exitCode !== null) throw new Error(`the server did not come up: ${stderr}`)
        await new Promise((r) => setTimeout(r, 100))
      }
      child.stdout.destroy()

      // Requests that log (401 lines), over more than one of the log's one-second flushes.
      const statuses: number[] = []
      const until = Date.now() + 2_500
      while (Date.now() < until) {
        statuses.push((await fetch(`${url}/v1/agents`)).status)
        await new Promise((r) => setTimeout(r, 20))
      }
      expect(new Set(statuses)).toEqual(new Set([401]))
      // Still serving after the writes to the closed pipe failed.
      expect((await fetch(`${url}/healthz`)).status).toBe(200)
      expect(child.exitCode).toBeNull()
      expect(stderr.match(/lost its reader \(EPIPE\)/g)).toHaveLength(1)
      expect(stderr).not.toMatch(/uncaught|unhandled|Error:|at .*\.js:\d+/)

      child.kill('SIGTERM')
      expect(await exited).toBe(0)
      expect(stderr).not.toMatch(/uncaught|unhandled|Error:/)
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await exited
      }
    }
  }, 60_000)
})
