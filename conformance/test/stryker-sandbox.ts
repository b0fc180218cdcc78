/**
 * A sandbox as StrykerJS makes one for the mutation run's tests: the kit copied (its build in dist/ included), its
 * build's modules instrumented by Stryker's own instrumenter with every mutant switchable.
 */
import { cpSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Instrumenter } from '@stryker-mutator/instrumenter'
// @ts-expect-error: plain ESM modules of the command, without types
import { quiet } from '../stryker/changes.mjs'
import { coverageSwitchable } from '../stryker/coverage.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { SUITE_TEST } from '../stryker/switch-runner.mjs'
import { scratchDir } from './scratch.js'

const root = join(import.meta.dirname, '..', '..')
const SKIPPED = new Set(['node_modules', '.git', '.stryker-tmp', 'reports', 'coverage', '.agentops'])

export interface Mutant {
  id: string
  fileName: string
  mutatorName: string
  replacement: string
  location: { start: { line: number; column?: number } }
  status?: string
}

/** The kit copied into a scratch directory, the build's `modules` (paths under dist/, no extension) instrumented. */
export async function sandbox(...modules: string[]): Promise<{ dir: string; mutants: readonly Mutant[] }> {
  const dir = scratchDir('stryker-switch-')
  cpSync(root, dir, {
    recursive: true,
    filter: (src) => !SKIPPED.has(src.slice(root.length + 1).split('/')[0] ?? ''),
  })
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  const files = modules.map((m) => join(dir, 'dist', `${m}.js`))
  const result = await new Instrumenter(quiet).instrument(
    files.map((name) => ({ name, content: readFileSync(name, 'utf8'), mutate: true })),
    { plugins: null, excludedMutations: [], ignorers: [], noHeader: false },
  )
  for (const file of result.files) writeFileSync(file.name, file.content)
  // As the sandbox's build leaves it: no coverage counted while a mutant is active (build.mjs).
  coverageSwitchable(join(dir, 'dist'))
  return { dir, mutants: result.mutants }
}

/**
 * What StrykerJS hands the runner's `mutantRun` for `mutant` of the sandbox's `sourceFile`: a runtime mutant
 * switched inside the running server (by the suite's one test), or a static one given a server loaded with it.
 */
export function mutantRunOptions(
  sourceFile: string,
  mutant: { id: string },
  activation: 'runtime' | 'static' = 'runtime',
) {
  return {
    activeMutant: mutant,
    mutantActivation: activation,
    reloadEnvironment: activation === 'static',
    sandboxFileName: sourceFile,
    timeout: 240_000,
    disableBail: false,
    ...(activation === 'runtime' ? { testFilter: [SUITE_TEST] } : {}),
  }
}
