/**
 * `agentops serve` says everything through its JSON log, a start that fails too: one `fatal` line with the error's
 * stack on stdout, exit 1; and for the person at the terminal one plain sentence on stderr: what failed, which
 * setting, what to do.
 */
import { spawnSync } from 'node:child_process'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { listenOnTestPort, testPort } from '../support/ports.js'

const ROOT = resolve(import.meta.dirname, '../..')

/** A loopback port nothing listens on (a harness port: probed free, handed out once). */
const closedPort = () => testPort()

/** `agentops serve` on a store URL it must refuse, logging at info with `env` on top. */
function serveRefused(databaseUrl: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync(
    process.execPath,
    [join(ROOT, 'bin/agentops.mjs'), 'serve', '--port', '0', '--database-url', databaseUrl],
    {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, HOST: '127.0.0.1', AGENTOPS_LOG_LEVEL: 'info', NODE_OPTIONS: '', ...env },
      timeout: 30_000,
    },
  )
}

describe('agentops serve failing to start', () => {
  it('logs one fatal line with the stack, says it in one sentence on stderr and exits 1', () => {
    const run = serveRefused('mysql://u:secret@h/db')
    expect(run.status).toBe(1)
    expect(run.stderr.trim().split('\n')).toHaveLength(1)
    expect(run.stderr).toMatch(
      /^agentops serve could not start: the database URL must be sqlite:<file> or postgres:\/\/…, not a mysql: URL\. Fix --database-url or AGENTOPS_DATABASE_URL\.\n$/,
    )
    expect(run.stderr).not.toContain('secret')
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { message: string; stack: string } })
    const fatal = lines.filter((l) => l.level === 60)
    expect(fatal).toHaveLength(1)
    expect(fatal[0]?.msg).toBe('start failed')
    expect(fatal[0]?.err?.message).toMatch(/must be sqlite:<file> or postgres:\/\//)
    expect(fatal[0]?.err?.stack).toContain('storeKind')
    expect(run.stdout).not.toContain('secret')
  })

  it('a PostgreSQL that refuses connections is named, with its URL but not its password', async () => {
    const closed = await closedPort()
    const run = serveRefused(`postgres://agentops:hunter2@127.0.0.1:${closed}/agentops`)
    expect(run.status).toBe(1)
    const sentence = run.stderr.trim()
    expect(sentence.split('\n')).toHaveLength(1)
    expect(sentence).toContain(
      `agentops serve could not start: cannot open the PostgreSQL store at postgres://agentops:***@127.0.0.1:${closed}/agentops: `,
    )
    expect(sentence).toMatch(/ECONNREFUSED/)
    expect(sentence).toMatch(/--database-url or AGENTOPS_DATABASE_URL; check that PostgreSQL runs there/)
    const fatal = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; err?: { message: string } })
      .find((l) => l.level === 60)
    expect(fatal?.err?.message).toContain('cannot open the PostgreSQL store at postgres://agentops:***@')
    expect(`${run.stdout}${run.stderr}`).not.toContain('hunter2')
  })

  it('a port in use names the port and the setting', async () => {
    const taken = createServer()
    const port = await listenOnTestPort(taken)
    try {
      const run = spawnSync(
        process.execPath,
        [join(ROOT, 'bin/agentops.mjs'), 'serve', '--port', String(port), '--host', '127.0.0.1'],
        {
          cwd: ROOT,
          encoding: 'utf8',
          env: { ...process.env, AGENTOPS_DATABASE_URL: 'sqlite::memory:', NODE_OPTIONS: '' },
          timeout: 30_000,
        },
      )
      expect(run.status).toBe(1)
      expect(run.stderr.trim()).toBe(
        `agentops serve could not start: port ${port} on 127.0.0.1 is already in use. Stop what listens there or choose another port with --port or PORT.`,
      )
    } finally {
      await new Promise<void>((r) => taken.close(() => r()))
    }
  })

  it('writes readable lines instead with AGENTOPS_LOG_PRETTY=on (what a terminal gets)', () => {
    const run = serveRefused('mysql://h/db', { AGENTOPS_LOG_PRETTY: 'on', NO_COLOR: '1' })
    expect(run.status).toBe(1)
    const lines = run.stdout.split('\n').filter((l) => /^\[/.test(l))
    expect(lines.some((l) => /FATAL.*start failed/.test(l))).toBe(true)
    for (const line of lines) expect(() => JSON.parse(line)).toThrow()
    expect(run.stdout).toContain('must be sqlite:<file> or postgres://')
  })
})
