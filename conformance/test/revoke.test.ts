/** The revoke contract (src/revoke.ts): the token on the command's standard input, and every way it can fail named. */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { resolveConfig } from '../src/config.js'
import { revokeToken } from '../src/revoke.js'
import { scratchDir } from './scratch.js'

describe('revokeToken', () => {
  it('writes the token on the command’s standard input and is done once it exits 0', async () => {
    const file = join(scratchDir('revoke-'), 'token')
    expect(await revokeToken(`cat > '${file}'`, 'aok_secret')).toBeUndefined()
    expect(readFileSync(file, 'utf8')).toBe('aok_secret\n')
  })

  it('names the setting, the exit code and the last line the command printed on stderr', async () => {
    const failed = await revokeToken("echo 'first' >&2; echo 'no such key' >&2; exit 3", 'aok_x')
    expect(failed).toBe(
      'the revoke command (--revoke / AGENTOPS_CONFORMANCE_REVOKE) exited with 3 (no such key)',
    )
  })

  it('gives up on a command that does not finish within its bound', async () => {
    const started = Date.now()
    expect(await revokeToken('sleep 5', 'aok_x', 200)).toContain('did not finish within 0.2 s')
    expect(Date.now() - started).toBeLessThan(4000)
  })

  it('is read from --revoke, the variable or the config file, and the revocable token with it', () => {
    const { config } = resolveConfig(
      [
        '--token',
        't',
        '--revoke',
        'revoke-it',
        '--revocable-token',
        'aok_r',
        '--base-url',
        'http://127.0.0.1:1',
      ],
      {},
    )
    expect(config.revoke).toBe('revoke-it')
    expect(config.tokens.revocable).toBe('aok_r')
    const fromEnv = resolveConfig(['--token', 't', '--base-url', 'http://127.0.0.1:1'], {
      AGENTOPS_CONFORMANCE_REVOKE: 'from-env',
    }).config
    expect(fromEnv.revoke).toBe('from-env')
  })
})
