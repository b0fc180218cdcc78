/** Every config key is documented and shown: README's "Config file keys" table and the examples against the schema. */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { configFileKeys, PACKAGE_ROOT, resolveConfig, unknownConfigKeys } from '../src/config.js'

const keys = configFileKeys().map((k) => k.replace(/\*$/, ''))

/** The keys of README's "Config file keys" table, in order. */
function readmeKeys(): string[] {
  const readme = readFileSync(join(PACKAGE_ROOT, 'README.md'), 'utf8')
  const section = readme.split('### Config file keys')[1]?.split('\n### ')[0] ?? ''
  return [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!)
}

/** Every dotted leaf key an example sets (objects of the deployment's own count as one key). */
function exampleKeys(): Set<string> {
  const open = configFileKeys()
    .filter((k) => k.endsWith('*'))
    .map((k) => k.slice(0, -1))
  const out = new Set<string>()
  const walk = (node: Record<string, unknown>, prefix: string) => {
    for (const [k, v] of Object.entries(node)) {
      const key = prefix ? `${prefix}.${k}` : k
      if (v !== null && typeof v === 'object' && !Array.isArray(v) && !open.includes(key))
        walk(v as Record<string, unknown>, key)
      else out.add(key)
    }
  }
  const dir = join(PACKAGE_ROOT, 'examples')
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.json')))
    walk(JSON.parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>, '')
  return out
}

describe('every config key is documented', () => {
  it("README's table lists exactly the keys the config file may hold", () => {
    expect(readmeKeys().sort()).toEqual([...keys].sort())
    expect(keys).toContain('tokens.otherScope')
  })

  it('each key is set in at least one example config, and the examples hold no other', () => {
    const shown = exampleKeys()
    expect(keys.filter((k) => !shown.has(k))).toEqual([])
    expect([...shown].filter((k) => !keys.includes(k))).toEqual([])
  })

  it('a config file with a key the suite does not read is refused, naming it', () => {
    expect(unknownConfigKeys({ tokens: { primary: 'x', otherscope: 'y' }, pagingg: {} })).toEqual([
      'tokens.otherscope',
      'pagingg',
    ])
    expect(unknownConfigKeys({ toolRun: { agent: { anything: { goes: 1 } } } })).toEqual([])
    const path = join(mkdtempSync(join(tmpdir(), 'config-keys-')), 'c.json')
    writeFileSync(path, JSON.stringify({ tokens: { primary: 't', otherScopeToken: 'x' } }))
    expect(() => resolveConfig(['--config', path])).toThrow(
      /keys the suite does not read: tokens.otherScopeToken/,
    )
  })
})
