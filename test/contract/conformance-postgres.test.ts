/**
 * The whole conformance suite against the reference server on PostgreSQL (the `--reference` run uses SQLite), so
 * the second store is held to every check, not only to the store-level tests.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const postgres = backends().filter((b) => b.name === 'postgres')

describe.skipIf(postgres.length === 0)('the conformance suite on PostgreSQL', () => {
  it('passes every check, core and profile, against the reference server on PostgreSQL', async () => {
    const url = await postgres[0]!.freshUrl()
    const child = spawn(
      process.execPath,
      ['bin/agentops-conformance.mjs', '--reference', '--strict-profile'],
      {
        cwd: ROOT,
        env: { ...process.env, AGENTOPS_CONFORMANCE_REFERENCE_DATABASE_URL: url },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let output = ''
    child.stdout.on('data', (d) => {
      output += d
    })
    child.stderr.on('data', (d) => {
      output += d
    })
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
    expect(output).toContain(`store ${url}`)
    expect(code, output.slice(-4000)).toBe(0)
    expect(output).toMatch(/core: +\d+ passed, 0 failed/)
  }, 180_000)
})
