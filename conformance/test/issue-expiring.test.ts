/** The short-lived key contract (src/issue-expiring.ts): what the command reads and prints, and each way it fails. */
import { describe, expect, it } from 'vitest'
import { resolveConfig } from '../src/config.js'
import { issueExpiringKey } from '../src/issue-expiring.js'

const NOW = Date.parse('2026-12-05T01:00:00.000Z')
const clock = () => NOW
/** A command printing `printed` (single-quoted for the shell). */
const printing = (printed: string) => `printf '%s' '${printed}'`

describe('issueExpiringKey', () => {
  it('gives the command the token on its standard input and reads the key it prints', async () => {
    // The command prints what it read as the new key's token: the token reached it, newline-terminated.
    const key = await issueExpiringKey(
      `read t; printf '{"token":"%s-new","expires_at":"2026-12-05T01:00:03Z"}' "$t"`,
      'aok_primary',
      60_000,
      clock,
    )
    expect(key).toEqual({ token: 'aok_primary-new', expiresAt: NOW + 3000 })
  })

  it('refuses a key that expires too soon or too late to hold connections across its expiry', async () => {
    for (const [at, life] of [
      ['2026-12-05T01:00:00.500Z', '0.5'],
      ['2026-12-05T00:59:00Z', '-60.0'],
      ['2026-12-05T01:01:01Z', '61.0'],
    ]) {
      const key = await issueExpiringKey(printing(`{"token":"t","expires_at":"${at}"}`), 'p', 60_000, clock)
      expect(key).toEqual({ problem: expect.stringContaining(`expiring ${life} s after it printed it`) })
    }
    const edges = await Promise.all(
      ['2026-12-05T01:00:01Z', '2026-12-05T01:01:00Z'].map((at) =>
        issueExpiringKey(printing(`{"token":"t","expires_at":"${at}"}`), 'p', 60_000, clock),
      ),
    )
    expect(edges.every((k) => 'token' in k)).toBe(true)
  })

  it('names the setting and what was wrong: no JSON, no token, no timestamp, an exit code, no end', async () => {
    const named = 'the short-lived key command (--issue-expiring / AGENTOPS_CONFORMANCE_ISSUE_EXPIRING)'
    expect(await issueExpiringKey(printing('aok_bare'), 'p', 60_000, clock)).toEqual({
      problem: `${named} printed no JSON object: aok_bare`,
    })
    for (const printed of [
      '{"expires_at":"2026-12-05T01:00:03Z"}',
      '{"token":"t","expires_at":"soon"}',
      '[1]',
    ])
      expect(await issueExpiringKey(printing(printed), 'p', 60_000, clock)).toEqual({
        problem: `${named} printed ${printed}, not {"token": "...", "expires_at": "<RFC 3339>"}`,
      })
    expect(await issueExpiringKey("echo 'no such key' >&2; exit 3", 'p', 60_000, clock)).toEqual({
      problem: `${named} exited with 3 (no such key)`,
    })
    expect(await issueExpiringKey('sleep 5', 'p', 200, clock)).toEqual({
      problem: `${named} did not finish within 0.2 s`,
    })
  })

  it('is read from --issue-expiring, the variable or the config file', () => {
    const base = ['--token', 't', '--base-url', 'http://127.0.0.1:1']
    expect(resolveConfig([...base, '--issue-expiring', 'issue-it'], {}).config.issueExpiring).toBe('issue-it')
    expect(
      resolveConfig(base, { AGENTOPS_CONFORMANCE_ISSUE_EXPIRING: 'from-env' }).config.issueExpiring,
    ).toBe('from-env')
    expect(resolveConfig(base, {}).config.issueExpiring).toBeUndefined()
  })
})
