/**
 * CI in the ecosystem's forms: the GitHub Action's step (conformance/ci/action.mjs, what action.yml runs) against
 * the reference writes the JUnit report, the job summary and the step's outputs, and exits with the suite's code;
 * action.yml and the GitLab template name only real inputs and settings.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { SETTINGS } from '../src/config.js'
import { scratchDir } from './scratch.js'

const ROOT = resolve(import.meta.dirname, '..', '..')

describe('the GitHub Action', () => {
  it('runs the suite from its inputs, uploads what it wrote and sets the job summary and outputs', () => {
    const dir = scratchDir('action-')
    const summary = join(dir, 'summary.md')
    const output = join(dir, 'output.txt')
    const run = spawnSync(process.execPath, [join(ROOT, 'conformance/ci/action.mjs')], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 300_000,
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        INPUT_ARGS: '--reference --only auth,resources --allow-incomplete',
        'INPUT_REPORTS-DIR': 'reports',
        GITHUB_STEP_SUMMARY: summary,
        GITHUB_OUTPUT: output,
      },
    })
    expect(run.status, `${run.stdout.slice(-2000)}\n${run.stderr}`).toBe(0)
    expect(run.stdout.trim().split('\n').at(-1)).toMatch(/^INCOMPLETE: .*accepted with --allow-incomplete/)
    const junit = readFileSync(join(dir, 'reports', 'conformance.xml'), 'utf8')
    expect(junit).toMatch(/<testcase name="verdict: INCOMPLETE/)
    expect(junit).toMatch(/auth\.missing-token-401/)
    expect(readFileSync(summary, 'utf8')).toMatch(/^## \S+ INCOMPLETE/m)
    expect(readFileSync(output, 'utf8')).toContain('verdict=INCOMPLETE\nexit-code=0\n')
  }, 300_000)

  it('action.yml passes each input to the step, and the step reads each', () => {
    const action = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as {
      inputs: Record<string, unknown>
      runs: { steps: Array<{ id?: string; env?: Record<string, string> }> }
    }
    const step = action.runs.steps.find((s) => s.id === 'run')
    const script = readFileSync(join(ROOT, 'conformance/ci/action.mjs'), 'utf8')
    for (const name of Object.keys(action.inputs)) {
      expect(step?.env?.[`INPUT_${name.toUpperCase()}`]).toBe(`\${{ inputs.${name} }}`)
      expect(script).toContain(`'${name}'`)
    }
  })

  it('the GitLab template sets real settings and reports the JUnit file it writes', () => {
    const template = parse(readFileSync(join(ROOT, 'conformance/ci/gitlab-ci.yml'), 'utf8')) as Record<
      string,
      { variables: Record<string, string>; artifacts: { reports: { junit: string } } }
    >
    const job = template['.agentops-conformance']!
    const known = new Set(SETTINGS.map((s) => `AGENTOPS_CONFORMANCE_${s.env}`))
    for (const name of Object.keys(job.variables).filter((n) => n !== 'AGENTOPS_CONFORMANCE_BUNDLE'))
      expect(known.has(name), name).toBe(true)
    expect(job.artifacts.reports.junit).toBe(job.variables.AGENTOPS_CONFORMANCE_JUNIT)
    expect(existsSync(join(ROOT, 'conformance/scripts/bundle.mjs'))).toBe(true)
  })
})
