import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../../src/cli/main.js'
import { testTempDir } from '../support/temp.js'

/** In-process, so every command's help is checked without spawning a process per command. */
describe('agentops --help per command', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  async function run(args: string[]): Promise<{ code: number; out: string }> {
    const lines: string[] = []
    vi.spyOn(console, 'log').mockImplementation((...parts: unknown[]) => {
      lines.push(parts.join(' '))
    })
    vi.spyOn(console, 'error').mockImplementation((...parts: unknown[]) => {
      lines.push(parts.join(' '))
    })
    const code = await main(args)
    return { code, out: lines.join('\n') }
  }

  it.each([
    [['keys', '--help'], 'agentops keys <create|list|revoke>'],
    [['keys', '-h'], 'agentops keys <create|list|revoke>'],
    [['workspaces', '--help'], 'agentops workspaces set NAME'],
    [['keys', 'create', '--help'], 'agentops keys create (--workspace NAME | --token-stdin)'],
    [['keys', 'list', '--help'], 'agentops keys list --workspace NAME'],
    [['keys', 'revoke', '--help'], 'agentops keys revoke (KEY_ID | --token-stdin)'],
    [['workspaces', 'set', '--help'], 'agentops workspaces set NAME'],
    [['serve', '--help'], 'agentops serve [--port N]'],
  ])('%j prints that command’s help and exits 0', async (args, first) => {
    const { code, out } = await run(args)
    expect(code).toBe(0)
    expect(out.startsWith(first)).toBe(true)
  })

  it('a group without its command explains the group and exits 2', async () => {
    const { code, out } = await run(['keys'])
    expect(code).toBe(2)
    expect(out).toContain('agentops keys <create|list|revoke>')
    expect((await run(['keys', 'bogus'])).code).toBe(2)
  })

  it('refuses bad flags and values with exit code 2', async () => {
    expect((await run(['keys', 'create', '--workspace', 'w', '--tier', 'gold'])).code).toBe(2)
    expect((await run(['keys', 'create', '--bogus'])).code).toBe(2)
    expect((await run(['frobnicate'])).code).toBe(2)
  })

  it.each([
    ['0', 'must be a positive integer, got "0"'],
    ['-3', 'must be a positive integer, got "-3"'],
    ['abc', 'must be a positive integer, got "abc"'],
    ['2.5', 'must be a positive integer, got "2.5"'],
    ['3601', 'must be at most 3600 (the hourly window), got "3601"'],
  ])('refuses --burst-window-seconds %s before opening a store', async (value, message) => {
    const url = `sqlite:${join(testTempDir('cli-window-'), 'never.db')}`
    for (const args of [
      ['keys', 'create', '--workspace', 'w', `--burst-window-seconds=${value}`, '--database-url', url],
      ['workspaces', 'set', 'w', `--burst-window-seconds=${value}`, '--database-url', url],
    ]) {
      const { code, out } = await run(args)
      expect(code, args.join(' ')).toBe(2)
      expect(out).toBe(`agentops: --burst-window-seconds ${message}`)
    }
    expect(existsSync(url.slice('sqlite:'.length))).toBe(false)
  })

  it('sets the burst window with --burst-window-seconds, prints it, and keeps it through a tier change', async () => {
    const url = `sqlite:${join(testTempDir('cli-window-'), 'db.sqlite')}`
    const json = async (args: string[]) => {
      const { code, out } = await run([...args, '--json', '--database-url', url])
      expect(code, out).toBe(0)
      return JSON.parse(out) as { burst_limit: number; burst_window_seconds: number; tier: string }
    }
    const issued = await json([
      'keys',
      'create',
      '--workspace',
      'w3',
      '--burst-limit',
      '5',
      '--burst-window-seconds',
      '3',
    ])
    expect(issued).toMatchObject({ burst_limit: 5, burst_window_seconds: 3 })
    expect(await json(['workspaces', 'set', 'w3', '--tier', 'pro'])).toMatchObject({
      tier: 'pro',
      burst_window_seconds: 3,
    })
    expect(await json(['workspaces', 'set', 'w3', '--burst-window-seconds', '3600'])).toMatchObject({
      burst_window_seconds: 3600,
    })
    expect(await json(['keys', 'create', '--workspace', 'w10'])).toMatchObject({ burst_window_seconds: 10 })
    expect((await run(['keys', 'create', '--help'])).out).toContain('--burst-window-seconds N')
    expect((await run(['workspaces', 'set', '--help'])).out).toContain('--burst-window-seconds N')
  })
})
