/**
 * A mutant run's instrumented server counts its active mutant's hits but not the dry run's coverage
 * (conformance/stryker/coverage.mjs): a module instrumented by StrykerJS's own instrumenter, made switchable as the
 * sandbox's build makes it, counts coverage until `__stryker__.coverageOff` is set, and the active mutant's hits
 * throughout.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Instrumenter } from '@stryker-mutator/instrumenter'
import { afterAll, describe, expect, it } from 'vitest'
// @ts-expect-error: plain ESM modules of the command, without types
import { quiet } from '../stryker/changes.mjs'
import { coverageSwitchable, coverageSwitchableText } from '../stryker/coverage.mjs'
import { scratchDir } from './scratch.js'

interface StrykerNamespace {
  currentTestId?: string
  activeMutant?: string
  hitCount?: number
  hitLimit?: number
  coverageOff?: boolean
  mutantCoverage?: { static: Record<string, number>; perTest: Record<string, Record<string, number>> }
}

const SOURCE = `export function size(x) {
  if (x > 1) return 'big'
  return 'small'
}
`
const holder = globalThis as { __stryker__?: StrykerNamespace }
const before = holder.__stryker__
afterAll(() => {
  holder.__stryker__ = before
})

describe('coverage switched off in a mutant run', () => {
  it('counts coverage until coverageOff is set, and the active mutant hits throughout', async () => {
    const dir = scratchDir('stryker-coverage-')
    const name = join(dir, 'dist', 'size.js')
    mkdirSync(join(dir, 'dist'))
    const result = await new Instrumenter(quiet).instrument([{ name, content: SOURCE, mutate: true }], {
      plugins: null,
      excludedMutations: [],
      ignorers: [],
      noHeader: false,
    })
    const instrumented = result.files[0]?.content ?? ''
    expect(instrumented).toContain('function stryCov_9fa48')
    writeFileSync(name, instrumented)
    writeFileSync(join(dir, 'dist', 'plain.js'), SOURCE)
    expect(coverageSwitchable(join(dir, 'dist'))).toBe(1)
    expect(readFileSync(join(dir, 'dist', 'plain.js'), 'utf8')).toBe(SOURCE)

    const ns: StrykerNamespace = { currentTestId: 'suite' }
    holder.__stryker__ = ns
    const { size } = (await import(pathToFileURL(name).href)) as { size: (x: number) => string }
    expect(size(2)).toBe('big')
    const counted = { ...ns.mutantCoverage?.perTest.suite }
    expect(Object.keys(counted).length).toBeGreaterThan(0)

    ns.coverageOff = true
    expect([size(2), size(0)]).toEqual(['big', 'small'])
    expect(ns.mutantCoverage?.perTest.suite).toEqual(counted)

    // Every mutant's hits are still counted while it is active.
    for (const mutant of Object.keys(counted)) {
      ns.activeMutant = mutant
      ns.hitLimit = Number.MAX_SAFE_INTEGER
      ns.hitCount = 0
      size(2)
      expect(ns.hitCount, mutant).toBeGreaterThan(0)
    }
    expect(ns.mutantCoverage?.perTest.suite).toEqual(counted)

    ns.coverageOff = false
    ns.activeMutant = undefined
    size(2)
    expect(ns.mutantCoverage?.perTest.suite).not.toEqual(counted)
  })

  it('refuses a build with no instrumented module, and a helper it does not recognise', () => {
    const dir = scratchDir('stryker-coverage-none-')
    writeFileSync(join(dir, 'plain.js'), SOURCE)
    expect(() => coverageSwitchable(dir)).toThrow(/no module instrumented by StrykerJS/)
    expect(coverageSwitchableText(SOURCE)).toBeUndefined()
    expect(() => coverageSwitchableText('function stryCov_9fa48() { function cover (){} }')).toThrow(
      /coverage helper has no/,
    )
  })
})
