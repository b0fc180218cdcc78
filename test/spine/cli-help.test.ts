import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../../src/cli/main.js'

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
    [['keys', 'create', '--help'], 'agentops keys create --workspace NAME'],
    [['keys', 'list', '--help'], 'agentops keys list --workspace NAME'],
    [['keys', 'revoke', '--help'], 'agentops keys revoke KEY_ID'],
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
})
