import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { missingNodeOptions, SERVER_NODE_OPTIONS } from '../../src/cli/node-options.js'
import { testTempDir } from '../support/temp.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const BIN = join(ROOT, 'bin/agentops.mjs')

describe('the Node options the server is started with', () => {
  it('npm start passes every one of them to node, before the script', () => {
    const start = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }
    ).scripts.start
    const words = start.split(/\s+/)
    const node = words.indexOf('node')
    const script = words.indexOf('bin/agentops.mjs')
    expect(node).toBeGreaterThanOrEqual(0)
    expect(script).toBeGreaterThan(node)
    for (const option of SERVER_NODE_OPTIONS) expect(words.slice(node + 1, script)).toContain(option)
  })

  it('finds an option on the command line or in NODE_OPTIONS, in any of the forms V8 reads', () => {
    expect(missingNodeOptions([], '')).toEqual(['--max-semi-space-size=64'])
    expect(missingNodeOptions(['--enable-source-maps'], '--max-old-space-size=4096')).toEqual([
      '--max-semi-space-size=64',
    ])
    expect(missingNodeOptions(['--max-semi-space-size=64'], '')).toEqual([])
    expect(missingNodeOptions(['--max_semi_space_size=64'], '')).toEqual([])
    expect(missingNodeOptions(['--max-semi-space-size', '64'], '')).toEqual([])
    expect(missingNodeOptions([], '  --inspect=0  --max-semi-space-size=64 ')).toEqual([])
    // Another value is the operator's choice.
    expect(missingNodeOptions(['--max-semi-space-size=128'], '')).toEqual([])
  })

  /**
   * Starts `agentops serve` with `nodeArgs` and resolves with its standard error once `done(stdout, stderr)` holds
   * (at most 30 s), then stops it.
   */
  async function serveUntil(
    nodeArgs: readonly string[],
    done: (out: string, err: string) => boolean,
  ): Promise<string> {
    const store = `sqlite:${join(testTempDir('node-options-'), 'store.db')}`
    const { NODE_OPTIONS: _inherited, ...env } = process.env
    const child = spawn(
      process.execPath,
      [...nodeArgs, BIN, 'serve', '--port', '0', '--database-url', store],
      {
        cwd: ROOT,
        env: { ...env, HOST: '127.0.0.1', AGENTOPS_LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d
    })
    child.stderr.on('data', (d: Buffer) => {
      err += d
    })
    try {
      const deadline = Date.now() + 30_000
      while (!done(out, err)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`serve: ${out}${err}`)
        await new Promise((r) => setTimeout(r, 25))
      }
      return err
    } finally {
      child.kill('SIGTERM')
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r))
    }
  }

  it('agentops serve started without them says which, and how to pass them; with them it says nothing', async () => {
    const without = await serveUntil([], (_out, err) => err.includes('bin/agentops.mjs serve'))
    expect(without).toContain('started without --max-semi-space-size=64')
    expect(without).toContain('node --max-semi-space-size=64 bin/agentops.mjs serve')
    // The hint is written in the same turn as the listening line: half a second later it would have arrived.
    let listening = 0
    const withThem = await serveUntil(SERVER_NODE_OPTIONS, (out) => {
      if (!/listening on/.test(out)) return false
      listening ||= Date.now()
      return Date.now() - listening > 500
    })
    expect(withThem).not.toContain('started without')
  })
})
