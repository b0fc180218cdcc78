/**
 * The mutation run's selection: every spec section of the scope names the checks that judge its mutants, each of
 * those prefixes selects at least one check (a typo would judge a section by nothing), and the quick run's
 * `--since` finds exactly the changed lines of the scope's modules.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ALL_CHECKS } from '../src/checks/index.js'
import { selectChecks } from '../src/runner.js'
// @ts-expect-error: plain ESM modules of the command, without types
import { changedRanges, countMutants } from '../stryker/changes.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { CHECKS, checksFor, SCOPE, sectionOf } from '../stryker/scope.mjs'
import { scratchDir } from './scratch.js'

describe('conformance:stryker selection', () => {
  it('every section names check prefixes, and each selects at least one check', () => {
    expect(Object.keys(CHECKS).sort()).toEqual(Object.keys(SCOPE).sort())
    for (const section of Object.keys(SCOPE)) {
      for (const prefix of checksFor(section) as string[])
        expect(selectChecks(ALL_CHECKS, [prefix]).length, `${section}: ${prefix}`).toBeGreaterThan(0)
    }
    expect(sectionOf('src/domain/idempotency/key.ts')).toBe('§8 idempotency')
    expect(sectionOf('src/domain/idempotency/ports.ts')).toBeUndefined()
    expect(sectionOf('src/http/app.ts')).toBeUndefined()
  })

  it('--since finds the changed lines of the scope’s modules only, and counts their mutants', async () => {
    const dir = scratchDir('stryker-since-')
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' })
    git('init', '-q')
    git('config', 'user.email', 'ci@example.invalid')
    git('config', 'user.name', 'ci')
    mkdirSync(join(dir, 'src', 'domain'), { recursive: true })
    mkdirSync(join(dir, 'src', 'http'), { recursive: true })
    const lines = ['export function f(a: number): number {', '  return a + 1', '}', '']
    writeFileSync(join(dir, 'src', 'domain', 'scopes.ts'), lines.join('\n'))
    writeFileSync(join(dir, 'src', 'http', 'app.ts'), 'export const x = 1\n')
    git('add', '.')
    git('commit', '-qm', 'base')
    expect(changedRanges(dir, 'HEAD')).toEqual([])
    writeFileSync(join(dir, 'src', 'domain', 'scopes.ts'), lines.join('\n').replace('a + 1', 'a - 1'))
    writeFileSync(join(dir, 'src', 'http', 'app.ts'), 'export const x = 2\n')
    writeFileSync(join(dir, 'src', 'domain', 'cursors.ts'), 'export const y = 1 + 2\n')
    const ranges = changedRanges(dir, 'HEAD')
    expect(ranges).toEqual([
      { file: 'src/domain/scopes.ts', start: 2, end: 2 },
      { file: 'src/domain/cursors.ts', start: 1, end: 2 },
    ])
    const counts = await countMutants(dir, ranges)
    expect(counts[0]).toBeGreaterThan(0)
    expect(counts[1]).toBeGreaterThan(0)
  })
})
