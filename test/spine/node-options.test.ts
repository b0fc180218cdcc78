import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  missingNodeOptions,
  SERVER_NODE_OPTIONS,
  SERVER_V8_FLAGS,
  serverV8Flags,
} from '../../src/cli/node-options.js'
import { testPort } from '../support/ports.js'
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

  it('sets its V8 flags itself unless the operator gave node the flag, with either value', () => {
    expect(SERVER_V8_FLAGS).toEqual(['--no-allocation-site-pretenuring'])
    expect(serverV8Flags([], '')).toEqual(['--no-allocation-site-pretenuring'])
    expect(serverV8Flags(['--max-semi-space-size=64', '--enable-source-maps'], '--inspect=0')).toEqual([
      '--no-allocation-site-pretenuring',
    ])
    expect(serverV8Flags(['--no-allocation-site-pretenuring'], '')).toEqual([])
    expect(serverV8Flags(['--no_allocation_site_pretenuring'], '')).toEqual([])
    expect(serverV8Flags(['--allocation-site-pretenuring'], '')).toEqual([])
    expect(serverV8Flags([], ' --allocation-site-pretenuring ')).toEqual([])
  })

  it('applyServerV8Flags turns allocation-site pretenuring off in the VM it runs in', () => {
    // V8 reports its pretenuring decisions under --trace-pretenuring-statistics; with the flag set it makes none.
    const churn = (apply: boolean) =>
      spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--trace-pretenuring-statistics',
          '--input-type=module',
          '--eval',
          `const m = await import(${JSON.stringify(join(ROOT, 'src/cli/node-options.ts'))})
           ${apply ? 'm.applyServerV8Flags()' : ''}
           let kept = []
           const make = (i) => ({ a: i, b: [i, i + 1], c: { d: i } })
           for (let i = 0; i < 3_000_000; i++) { kept.push(make(i)); if (kept.length > 20_000) kept = [] }`,
        ],
        { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, timeout: 60_000 },
      )
    const control = churn(false)
    expect(control.status).toBe(0)
    expect(control.stdout).toMatch(/pretenuring: AllocationSite/)
    const applied = churn(true)
    expect(applied.status).toBe(0)
    expect(applied.stdout).not.toMatch(/pretenuring/)
  })

  /**
   * Starts `agentops serve` with `nodeArgs` and resolves with its standard error once `done(stdout, stderr)` holds
   * (at most 30 s), then stops it.
   */
  async function serveUntil(
    nodeArgs: readonly string[],
    done: (out: string, err: string) => boolean,
  ): Promise<{ out: string; err: string }> {
    const store = `sqlite:${join(testTempDir('node-options-'), 'store.db')}`
    const { NODE_OPTIONS: _inherited, ...env } = process.env
    const child = spawn(
      process.execPath,
      [...nodeArgs, BIN, 'serve', '--port', String(await testPort()), '--database-url', store],
      {
        cwd: ROOT,
        env: { ...env, HOST: '127.0.0.1', AGENTOPS_LOG_LEVEL: 'info' },
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
      return { out, err }
    } finally {
      child.kill('SIGTERM')
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r))
    }
  }

  it('agentops serve started without them says which, and how to pass them; with them it says nothing', async () => {
    const started = (out: string) => logLines(out).some((l) => l.msg === 'server started')
    const without = await serveUntil([], started)
    const hint = logLines(without.out).find((l) => l.level === 40)
    expect(hint?.missing_node_options).toEqual(['--max-semi-space-size=64'])
    expect(hint?.msg).toContain('node --max-semi-space-size=64 bin/agentops.mjs serve')
    // The V8 flags it sets itself, it says as it starts.
    expect(logLines(without.out).find((l) => l.msg === 'starting')?.v8_flags).toEqual([
      '--no-allocation-site-pretenuring',
    ])
    // Everything it says is on stdout, one JSON object a line (a log collector reads it); nothing on stderr.
    expect(without.err).toBe('')
    const withThem = await serveUntil(SERVER_NODE_OPTIONS, started)
    expect(logLines(withThem.out).filter((l) => l.level === 40)).toEqual([])
    // An operator's own value of the flag is left as given.
    const operators = await serveUntil(['--allocation-site-pretenuring'], started)
    expect(logLines(operators.out).find((l) => l.msg === 'starting')?.v8_flags).toEqual([])
  })
})

/** stdout's JSON lines (every line is one: a line that is not fails here). */
function logLines(out: string): Record<string, unknown>[] {
  return out
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}
