import { XMLParser, XMLValidator } from 'fast-xml-parser'
import { describe, expect, it } from 'vitest'
import { toJson } from '../src/report/json.js'
import { toJunit } from '../src/report/junit.js'
import { toMarkdown } from '../src/report/markdown.js'
import { formatResult, formatSummary } from '../src/report/text.js'
import { type CheckResult, exitCodeFor, type RunSummary } from '../src/types.js'

const failing: CheckResult = {
  id: 'auth.missing-token-401',
  title: 'A request without <Authorization> & "quotes"',
  level: 'core',
  family: 'auth',
  clauses: ['S5.2', 'S7.4'],
  outcome: 'fail',
  message: 'expected 401, got 200 \u0001 control & <tag>',
  exchanges: [
    {
      method: 'GET',
      url: 'http://127.0.0.1:1/v1/agents',
      requestHeaders: { authorization: 'Bearer aok_1234…' },
      status: 200,
      responseHeaders: { 'content-type': 'application/json', 'x-request-id': 'req_1' },
      responseBody: `{"data":[${'1,'.repeat(500)}1]}`,
      durationMs: 3,
    },
  ],
  durationMs: 12,
}

const summary: RunSummary = {
  startedAt: '2026-11-23T09:00:00.000Z',
  finishedAt: '2026-11-23T09:00:10.000Z',
  baseUrl: 'http://127.0.0.1:1',
  seed: 42,
  requestsUsed: 17,
  traceability: { statements: 40, covered: 38 },
  results: [
    failing,
    {
      ...failing,
      id: 'auth.www-authenticate',
      level: 'profile',
      outcome: 'pass',
      message: undefined as never,
      exchanges: [],
    },
    {
      ...failing,
      id: 'ratelimit.recovers',
      family: 'ratelimit',
      level: 'profile',
      outcome: 'skip',
      message: 'no token',
      exchanges: [],
    },
  ],
}

describe('JUnit XML', () => {
  const xml = toJunit(summary)

  it('is well-formed XML even with markup and control characters in messages', () => {
    expect(XMLValidator.validate(xml)).toBe(true)
  })

  it('has one testsuite per level and family and one testcase per check, with counts', () => {
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(xml)
    const suites = [doc.testsuites.testsuite].flat()
    expect(suites.map((s: { name: string }) => s.name).sort()).toEqual([
      'core.auth',
      'profile.auth',
      'profile.ratelimit',
    ])
    expect(doc.testsuites.tests).toBe('3')
    expect(doc.testsuites.failures).toBe('1')
    expect(doc.testsuites.skipped).toBe('1')
    const core = suites.find((s: { name: string }) => s.name === 'core.auth')
    expect(core.failures).toBe('1')
    expect(core.testcase.failure.message).toContain('expected 401, got 200')
    expect(core.testcase.failure['#text']).toContain('GET http://127.0.0.1:1/v1/agents')
    const skipped = suites.find((s: { name: string }) => s.name === 'profile.ratelimit')
    expect(skipped.testcase.skipped.message).toBe('no token')
  })
})

describe('other reports', () => {
  it('JSON carries counts and every result', () => {
    const parsed = JSON.parse(toJson(summary))
    expect(parsed.counts.core.fail).toBe(1)
    expect(parsed.counts.profile).toEqual({ pass: 1, fail: 0, skip: 1, partial: 0 })
    expect(parsed.results).toHaveLength(3)
  })

  it('Markdown has a row per check and the coverage line', () => {
    const md = toMarkdown(summary)
    expect(md).toContain('| core | 0 | 1 | 0 |')
    expect(md).toContain('38 of 40 normative statements')
    expect(
      md.split('\n').filter((l) => l.startsWith('| ❌') || l.startsWith('| ✅') || l.startsWith('| ⏭️')),
    ).toHaveLength(3)
  })

  it('the live line of a failure is one line and why; --verbose adds the request and the trimmed response', () => {
    const compact = formatResult(failing, 0, 3)
    expect(compact.split('\n')).toHaveLength(2)
    expect(compact).toContain('FAIL core')
    expect(compact).not.toContain('> GET')
    const text = formatResult(failing, 0, 3, true)
    expect(text).toContain('> GET http://127.0.0.1:1/v1/agents')
    expect(text).toContain('< 200')
    expect(text).toMatch(/… \(\d+ chars\)/)
    expect(formatSummary(summary, false)).toContain('failed core checks: auth.missing-token-401')
  })
})

describe('exit code', () => {
  it('is 1 only for core failures unless profile is strict', () => {
    const profileFail = [{ ...failing, level: 'profile' as const }]
    expect(exitCodeFor(summary.results, false)).toBe(1)
    expect(exitCodeFor(profileFail, false)).toBe(0)
    expect(exitCodeFor(profileFail, true)).toBe(1)
    expect(exitCodeFor([], false)).toBe(0)
  })
})
