#!/usr/bin/env node
/**
 * What Stryker runs for each mutant (its command runner): the conformance suite against the reference server built
 * from the mutated sources of this sandbox, every profile failure counting (--strict-profile), so the suite is the
 * only test that can kill a mutant. Each run's JSON report is kept under STRYKER_SUITE_REPORTS, named by the active
 * mutant, for the per-section table (killed at core, by profile only).
 *
 * Cheap per mutant: the run stops at the first core failure (--bail), and only the check families of the mutated
 * module's spec section run (scope.mjs CHECKS; the section is found by the mutant's id in the sandbox's
 * instrumented sources). The dry run (no active mutant) runs every check.
 *
 * Killed means the suite noticed: a core failure, a profile failure, or a selected core check that could not run
 * (skipped or partial against a reference whose clean run passes it). Exit 0 is a survivor.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { noticed } from './noticed.mjs'
import { checksFor, sectionOf } from './scope.mjs'

const root = join(import.meta.dirname, '..', '..')
const mutant = process.env.__STRYKER_ACTIVE_MUTANT__
const reports = process.env.STRYKER_SUITE_REPORTS

/** The scope's source file that holds a mutant, found by its id in the instrumented sources. */
function fileOf(id) {
  const marker = `stryMutAct_9fa48("${id}")`
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        const found = walk(path)
        if (found) return found
      } else if (entry.name.endsWith('.ts')) {
        const file = relative(root, path)
        if (sectionOf(file) && readFileSync(path, 'utf8').includes(marker)) return file
      }
    }
    return undefined
  }
  return walk(join(root, 'src'))
}

const section = mutant ? sectionOf(fileOf(mutant) ?? '') : undefined
const only = section ? checksFor(section) : undefined
const json = reports ? join(reports, `${mutant ?? 'clean'}.json`) : undefined
// The suite as the sandbox's build command compiled it (conformance/dist): its TypeScript sources through tsx cost
// each run most of a second of CPU more.
const compiled = join(root, 'conformance', 'dist', 'cli.js')
const entry = existsSync(compiled)
  ? [
      '--input-type=module',
      '-e',
      `const cli = await import(${JSON.stringify(pathToFileURL(compiled).href)}); await cli.runProgram(process.argv.slice(1))`,
      '--',
    ]
  : [join(root, 'conformance', 'bin', 'agentops-conformance.mjs')]
const args = [
  ...entry,
  '--reference',
  '--strict-profile',
  // The dry run too: --bail orders the checks (core first), so the clean run proves that order passes.
  '--bail',
  ...(only ? ['--only', only.join(',')] : []),
]
if (json) {
  mkdirSync(reports, { recursive: true })
  args.push('--json', json)
}
const run = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })

if (json && existsSync(json) && run.status !== null) {
  process.exitCode = noticed(JSON.parse(readFileSync(json, 'utf8'))) ? 1 : 0
} else process.exitCode = run.status ?? 1
