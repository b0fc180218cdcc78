/**
 * The client's install instructions work today: both READMEs show the tarball `npm pack -w agentops-client` really
 * writes (its name and version from the pack itself), and neither tells anyone to install it from the registry,
 * where it is not.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(import.meta.dirname, '../..')

describe('installing agentops-client as the READMEs say', () => {
  it('names the tarball npm pack writes, and no registry install', () => {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '-w', 'agentops-client', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, npm_config_loglevel: 'silent' },
      }),
    ) as Array<{ filename: string; files: Array<{ path: string }> }>
    const tarball = packed[0]?.filename ?? ''
    expect(tarball).toMatch(/^agentops-client-\d+\.\d+\.\d+\.tgz$/)
    // What the import needs is inside: the entry point and its types.
    const files = (packed[0]?.files ?? []).map((f) => f.path)
    expect(files).toEqual(
      expect.arrayContaining(['dist/src/index.js', 'dist/src/index.d.ts', 'package.json']),
    )
    for (const readme of ['README.md', 'client/README.md']) {
      const text = readFileSync(join(ROOT, readme), 'utf8')
      expect(text, readme).toContain('npm pack -w agentops-client')
      expect(text, readme).toContain(`npm install /path/to/agentops-contract-kit/${tarball}`)
      // A command line installing it from the registry (the E404 a user hit).
      const fromRegistry = text
        .split('\n')
        .filter((l) => /^\s*(\$ )?npm (install|i) agentops-client\b/.test(l))
      expect(fromRegistry, readme).toEqual([])
    }
  })
})
