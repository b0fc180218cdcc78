import { describe, expect, it } from 'vitest'
import { fixFor } from '../src/fix.js'
import { toJson } from '../src/report/json.js'
import { toJunit } from '../src/report/junit.js'
import { toMarkdown } from '../src/report/markdown.js'
import { formatResult, formatSummary } from '../src/report/text.js'
import type { CheckResult, RunSummary } from '../src/types.js'
import { settingsNamed, verdictFor } from '../src/verdict.js'

const result = (id: string, level: 'core' | 'profile', outcome: CheckResult['outcome'], message?: string) =>
  ({
    id,
    title: id,
    level,
    family: id.split('.')[0] ?? id,
    clauses: [],
    outcome,
    ...(message ? { message } : {}),
    exchanges: [],
    durationMs: 1,
  }) satisfies CheckResult

const run = (results: CheckResult[], extra: Partial<RunSummary> = {}): RunSummary => ({
  startedAt: '2026-11-24T00:00:00.000Z',
  finishedAt: '2026-11-24T00:00:01.000Z',
  baseUrl: 'http://127.0.0.1:1',
  seed: 1,
  requestsUsed: 3,
  results,
  ...extra,
})

const lenient = { strictProfile: false, allowIncomplete: false }

describe('the verdict', () => {
  it('CONFORMANT (0) when every core check ran and passed, whatever the profile checks did', () => {
    const v = verdictFor(run([result('a.x', 'core', 'pass'), result('p.y', 'profile', 'fail')]), lenient)
    expect(v).toMatchObject({ verdict: 'CONFORMANT', exitCode: 0 })
    expect(v.line).toBe('CONFORMANT: all 1 core checks ran and passed')
  })

  it('NOT CONFORMANT (1) when a core check failed, even with others skipped', () => {
    const v = verdictFor(
      run([
        result('a.x', 'core', 'fail'),
        result('a.y', 'core', 'skip', 'no narrow-scope token (--narrow-token)'),
      ]),
      { strictProfile: false, allowIncomplete: true },
    )
    expect(v).toMatchObject({ verdict: 'NOT CONFORMANT', exitCode: 1 })
    expect(v.line).toMatch(/^NOT CONFORMANT: 1 of 2 core checks failed: a\.x/)
  })

  it('a profile failure counts only with --strict-profile', () => {
    const results = [result('a.x', 'core', 'pass'), result('p.y', 'profile', 'fail')]
    expect(verdictFor(run(results), { strictProfile: true, allowIncomplete: false })).toMatchObject({
      verdict: 'NOT CONFORMANT',
      exitCode: 1,
      strictProfileFailures: ['p.y'],
    })
  })

  it('INCOMPLETE (3) when core checks were skipped, naming the settings that would run them', () => {
    const v = verdictFor(
      run([
        result('a.x', 'core', 'pass'),
        result(
          'a.y',
          'core',
          'skip',
          'no second-workspace token (--second-token / AGENTOPS_CONFORMANCE_SECOND_TOKEN) given',
        ),
        result(
          'a.z',
          'core',
          'skip',
          'no narrow-scope token (--narrow-token / AGENTOPS_CONFORMANCE_NARROW_TOKEN) given',
        ),
        result('a.w', 'core', 'skip', 'no receiver'),
        result('p.q', 'profile', 'skip', 'no --limited-token'),
      ]),
      lenient,
    )
    expect(v).toMatchObject({
      verdict: 'INCOMPLETE',
      exitCode: 3,
      needs: ['--second-token', '--narrow-token'],
    })
    expect(v.line).toBe(
      'INCOMPLETE: no core check failed, but 3 of 4 core checks did not run: 3 skipped (they need --second-token, --narrow-token) and (see a.w); --allow-incomplete accepts this',
    )
  })

  it('--allow-incomplete turns INCOMPLETE into exit 0 and says so', () => {
    const v = verdictFor(run([result('a.y', 'core', 'skip', 'needs --second-token')]), {
      strictProfile: false,
      allowIncomplete: true,
    })
    expect(v).toMatchObject({ verdict: 'INCOMPLETE', exitCode: 0 })
    expect(v.line).toMatch(/accepted with --allow-incomplete/)
  })

  it('a core check of an undeclared optional surface is not missing: it does not make the run INCOMPLETE', () => {
    const na = { ...result('graphql.x', 'core', 'skip', 'no GraphQL surface declared'), notApplicable: true }
    const v = verdictFor(run([result('a.x', 'core', 'pass'), na]), lenient)
    expect(v).toMatchObject({ verdict: 'CONFORMANT', exitCode: 0 })
    expect(v.line).toBe(
      'CONFORMANT: all 1 core checks that apply ran and passed (the other 1 of the 2 concern optional surfaces the deployment does not declare)',
    )
  })

  it('one total everywhere: the summary line, the verdict line and the JSON count every core check once', () => {
    const na = { ...result('graphql.x', 'core', 'skip', 'no GraphQL surface declared'), notApplicable: true }
    const summary = run(
      [
        result('a.ok', 'core', 'pass'),
        result('a.bad', 'core', 'fail', 'answered 200, not 202'),
        result('a.skip', 'core', 'skip', 'no second-workspace token (--second-token / X) given'),
        na,
      ],
      { notSelected: ['a.out'] },
    )
    summary.verdict = verdictFor(summary, lenient)
    expect(summary.verdict.line).toMatch(/^NOT CONFORMANT: 1 of 5 core checks failed: a\.bad$/)
    expect(formatSummary(summary, false)).toContain(
      'core:    1 passed, 1 failed, 1 skipped, 1 not applicable, 1 left out (5 core checks)',
    )
    expect((JSON.parse(toJson(summary)) as { verdict: { core: { total: number } } }).verdict.core.total).toBe(
      5,
    )
  })

  it('every failed or skipped line ends with the one setting that addresses it; the reports carry the whole reason', () => {
    const long = `the deployment refused the receiver ${'x'.repeat(900)} (set --receiver-url / AGENTOPS_CONFORMANCE_RECEIVER_URL)`
    const cases: Array<[CheckResult, string]> = [
      [
        result('a.skip', 'core', 'skip', 'no second-workspace token (--second-token / X) given'),
        '--second-token / AGENTOPS_CONFORMANCE_SECOND_TOKEN',
      ],
      [
        result('a.wait', 'core', 'fail', 'nothing within 15000 ms (raise --wait-ms)'),
        '--wait-ms / AGENTOPS_CONFORMANCE_WAIT_MS',
      ],
      [
        { ...result('a.spec', 'core', 'fail', 'answered 200, not 202'), clauses: ['S2.11'] },
        'the deployment (spec S2.11)',
      ],
      [result('a.long', 'core', 'fail', long), '--receiver-url / AGENTOPS_CONFORMANCE_RECEIVER_URL'],
    ]
    for (const [r, fix] of cases) {
      const withFix = { ...r, fix: fixFor(r) }
      expect(withFix.fix).toBe(fix)
      const printed = formatResult(withFix, 0, 1)
      expect(printed.endsWith(`→ fix: ${fix}`)).toBe(true)
      const summary = run([withFix])
      expect(toMarkdown(summary)).toContain(r.message)
      expect(toJunit(summary)).toContain(`${r.message} → fix: ${fix}`)
      expect(JSON.parse(toJson(summary)).results[0].message).toBe(r.message)
    }
    // The deployment refused the receiver before the run: a webhook check's failure names the receiver's URL.
    const refused = fixFor(result('webhooks.subscribe', 'core', 'fail', 'POST /v1/webhooks answered 400'), {
      receiverRefused: 'http://127.0.0.1:9/hooks (400 private address)',
    })
    expect(refused).toMatch(
      /^--receiver-url \/ AGENTOPS_CONFORMANCE_RECEIVER_URL: a URL the deployment accepts/,
    )
  })

  it('core checks left out by --only/--skip make the run INCOMPLETE too', () => {
    const v = verdictFor(run([result('a.x', 'core', 'pass')], { notSelected: ['a.y', 'a.z'] }), lenient)
    expect(v).toMatchObject({ verdict: 'INCOMPLETE', exitCode: 3 })
    expect(v.line).toMatch(/2 of 3 core checks did not run: 2 left out by --only\/--skip/)
  })

  it('a run that ended early has no verdict: ERROR, exit 1 (internal) or 2 (configuration)', () => {
    expect(verdictFor(run([], { internalError: 'internal error: boom' }), lenient)).toMatchObject({
      verdict: 'ERROR',
      exitCode: 1,
    })
    expect(verdictFor(run([], { internalError: 'configuration error: no token' }), lenient).exitCode).toBe(2)
  })

  it('skip reasons name their flags', () => {
    expect(settingsNamed('no token (--second-token / AGENTOPS_X) or --receiver-url; --second-token')).toEqual(
      ['--second-token', '--receiver-url'],
    )
  })
})

describe('every report carries the verdict, first', () => {
  const summary = run([
    result('a.x', 'core', 'pass'),
    result('a.y', 'core', 'skip', 'needs --second-token'),
    result('p.y', 'profile', 'fail', 'profile says no'),
  ])
  summary.verdict = verdictFor(summary, lenient)

  it('JSON: `verdict` is the first key', () => {
    const json = JSON.parse(toJson(summary)) as Record<string, unknown>
    expect(Object.keys(json)[0]).toBe('verdict')
    expect(json.verdict).toMatchObject({ verdict: 'INCOMPLETE', exitCode: 3, needs: ['--second-token'] })
  })

  it('JUnit: a verdict test case first, skipped while INCOMPLETE', () => {
    const xml = toJunit(summary)
    expect(xml.indexOf('name="verdict"')).toBeLessThan(xml.indexOf('a.x'))
    expect(xml).toMatch(/<property name="verdict" value="INCOMPLETE"\/>/)
    expect(xml).toMatch(/<testsuites [^>]*tests="4" failures="1" errors="0" skipped="2"/)
  })

  it('Markdown: leads with the verdict, core table before the folded profile results', () => {
    const md = toMarkdown(summary)
    expect(md.split('\n')[2]).toBe('## ⚠️ INCOMPLETE')
    expect(md.indexOf('## Core checks')).toBeLessThan(md.indexOf('## Profile checks of a spec sentence'))
    expect(md.indexOf('## Profile checks of a spec sentence')).toBeLessThan(
      md.indexOf('<details><summary>Where the spec is silent'),
    )
    expect(md.indexOf('`a.x`')).toBeLessThan(md.indexOf('`p.y`'))
  })
})

describe('a core check only partly run', () => {
  it('makes the verdict INCOMPLETE with the setting its reason names, never CONFORMANT', () => {
    const v = verdictFor(
      run([
        result('a.x', 'core', 'pass'),
        result(
          'a.y',
          'core',
          'partial',
          'the agent-list part did not run: GET /v1/agents answered 404 (list "GET /v1/agents" in notServed in --config if the deployment does not serve it)',
        ),
        result('p.z', 'profile', 'partial', 'no --other-scope-token'),
      ]),
      lenient,
    )
    expect(v).toMatchObject({
      verdict: 'INCOMPLETE',
      exitCode: 3,
      needs: ['notServed in --config'],
      core: { partial: ['a.y'], skipped: [] },
    })
    expect(v.line).toBe(
      'INCOMPLETE: no core check failed, but 1 of 2 core checks did not fully run: 1 only partly ran (a.y) (they need notServed in --config); --allow-incomplete accepts this',
    )
  })

  it('a profile check only partly run leaves a CONFORMANT verdict', () => {
    const v = verdictFor(
      run([result('a.x', 'core', 'pass'), result('p.z', 'profile', 'partial', 'x')]),
      lenient,
    )
    expect(v.verdict).toBe('CONFORMANT')
  })

  it('reasons name config keys as "KEY in --config", not --config itself', () => {
    expect(settingsNamed('declare approval in --config, or --second-token')).toEqual([
      '--second-token',
      'approval in --config',
    ])
  })
})
