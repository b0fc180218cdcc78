#!/usr/bin/env node
/**
 * What Stryker runs for each mutant (its command runner): the conformance suite against the reference server built
 * from the mutated sources of this sandbox, every profile failure counting (--strict-profile), so the suite is the
 * only test that can kill a mutant. Each run's JSON report is kept under STRYKER_SUITE_REPORTS, named by the active
 * mutant, for the per-section table (killed at core, by profile only).
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', '..')
const mutant = process.env.__STRYKER_ACTIVE_MUTANT__ ?? 'clean'
const reports = process.env.STRYKER_SUITE_REPORTS
const args = [join(root, 'conformance', 'bin', 'agentops-conformance.mjs'), '--reference', '--strict-profile']
if (reports) {
  mkdirSync(reports, { recursive: true })
  args.push('--json', join(reports, `${mutant}.json`))
}
const run = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
process.exitCode = run.status ?? 1
