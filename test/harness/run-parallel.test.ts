/**
 * scripts/run-parallel.mjs, what `npm test` runs its lanes with: every script runs to its end, the run fails when
 * one failed, and a failed script's last lines come again at the very end, where a log read from its tail shows them.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const SCRIPT = fileURLToPath(new URL('../../scripts/run-parallel.mjs', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'agentops-run-parallel-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const lines = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => `echo line-${from + i}`).join('; ')
writeFileSync(
  join(dir, 'package.json'),
  JSON.stringify({
    name: 'run-parallel-fixture',
    scripts: {
      broken: `${lines(1, 40)}; exit 3`,
      fine: 'echo fine-output',
      slow: 'sleep 0.3; echo slow-output',
    },
  }),
)

function run(...scripts: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SCRIPT, ...scripts], { cwd: dir }, (error, stdout) => {
      resolve({ code: error ? Number(error.code) : 0, stdout })
    })
  })
}

describe('run-parallel', () => {
  it('passes when every script passes, each output whole', async () => {
    const { code, stdout } = await run('slow', 'fine')
    expect(code).toBe(0)
    expect(stdout).toMatch(/> fine\nfine-output\nrun-parallel: fine ok in/)
    expect(stdout).toMatch(/> slow\nslow-output\nrun-parallel: slow ok in/)
    expect(stdout).not.toContain('failed')
  })

  it('fails when one fails, runs the others to their end and repeats the failed one’s last 30 lines last', async () => {
    const { code, stdout } = await run('broken', 'slow')
    expect(code).toBe(1)
    expect(stdout).toContain('run-parallel: slow ok in')
    expect(stdout).toContain('run-parallel: broken FAILED (exit 3)')
    const at = stdout.indexOf('run-parallel: broken failed (exit 3); the last 30 lines of its output:')
    expect(at).toBeGreaterThan(stdout.indexOf('run-parallel: slow ok in'))
    expect(at).toBeGreaterThan(stdout.indexOf('run-parallel: broken FAILED'))
    const repeated = stdout.slice(at)
    expect(repeated).toContain('line-11\n')
    expect(repeated).toContain('line-40\n')
    expect(repeated).not.toContain('line-10\n')
    expect(stdout.trimEnd().endsWith('run-parallel: failed: broken')).toBe(true)
  })
})
