/**
 * `agentops serve` says everything through its JSON log, a start that fails too: one `fatal` line with the error's
 * stack on stdout, nothing on stderr, exit 1.
 */
import { spawnSync } from 'node:child_process'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(import.meta.dirname, '../..')

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
  it('logs one fatal line with the stack and exits 1', () => {
    const run = serveRefused('mysql://u:secret@h/db')
    expect(run.status).toBe(1)
    expect(run.stderr).toBe('')
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

  it('writes readable lines instead with AGENTOPS_LOG_PRETTY=on (what a terminal gets)', () => {
    const run = serveRefused('mysql://h/db', { AGENTOPS_LOG_PRETTY: 'on', NO_COLOR: '1' })
    expect(run.status).toBe(1)
    const lines = run.stdout.split('\n').filter((l) => /^\[/.test(l))
    expect(lines.some((l) => /FATAL.*start failed/.test(l))).toBe(true)
    for (const line of lines) expect(() => JSON.parse(line)).toThrow()
    expect(run.stdout).toContain('must be sqlite:<file> or postgres://')
  })
})
