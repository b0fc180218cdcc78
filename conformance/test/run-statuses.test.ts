/**
 * Run statuses the spec does not name (§3 names only queued and awaiting_approval) are the deployment's. Through the
 * reference behind a proxy that renames them (the own-status-names dialect): undeclared, the core checks that wait
 * on a run skip or are partial naming `runStatuses`, so the verdict is INCOMPLETE and never NOT CONFORMANT; declared,
 * they pass; and declared, a run left in a live status after cancel still fails.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  declareOwnStatusNames,
  OWN_STATUS_NAMES,
  statusNamesDialect,
} from '../mutants/dialects/status-names.js'
import { editJson, pathOnly } from '../mutants/proxy.js'
import type { SuiteConfig } from '../src/config.js'
import { RunStatuses, runStatusNamesProblem } from '../src/run-statuses.js'
import type { RunSummary } from '../src/types.js'
import { type ProxiedReference, startProxiedReference } from './proxied-reference.js'

const CHECKS = ['runs.start-201-fields', 'webhooks.run-failed-delivered', 'runs.cancel-flushes-approvals']

let t: ProxiedReference

beforeAll(async () => {
  t = await startProxiedReference()
}, 60_000)

afterAll(() => t?.stop())

function run(configure: (c: SuiteConfig) => void, ids = CHECKS): Promise<RunSummary> {
  const c = t.config(['--seed', '11'])
  // A status the suite cannot place is waited for once, for the whole wait: kept short here.
  c.waitMs = 3000
  configure(c)
  return t.run(c, ids)
}

describe('run statuses of the deployment’s own names', () => {
  it('undeclared, the checks that wait on a run cannot judge it: INCOMPLETE naming runStatuses, no failure', async () => {
    t.proxy.mutant = statusNamesDialect()
    const summary = await run(() => {})
    for (const id of CHECKS) {
      const r = summary.results.find((x) => x.id === id)
      expect(['skip', 'partial'], `${id}: ${r?.outcome} ${r?.message}`).toContain(r?.outcome)
      expect(r?.message).toMatch(/a status the suite cannot place .* runStatuses in --config/)
    }
    expect(summary.results.find((x) => x.id === 'runs.cancel-flushes-approvals')?.outcome).toBe('partial')
    expect(summary.verdict).toMatchObject({ verdict: 'INCOMPLETE', exitCode: 3 })
    expect(summary.verdict?.needs).toContain('runStatuses in --config')
  }, 120_000)

  it('declared, the same checks pass', async () => {
    t.proxy.mutant = statusNamesDialect()
    const summary = await run(declareOwnStatusNames)
    for (const id of CHECKS) expect(summary.results.find((x) => x.id === id)?.outcome, id).toBe('pass')
    expect(summary.verdict?.verdict).toBe('CONFORMANT')
  }, 120_000)

  it('declared, a cancel that leaves the run in its running status fails', async () => {
    const dialect = statusNamesDialect()
    t.proxy.mutant = {
      ...dialect,
      id: 'cancel-leaves-in-progress',
      response(req, res, ctx) {
        const renamed = dialect.response!(req, res, ctx) as typeof res
        if (req.method !== 'GET' || !/^\/v1\/runs\/[^/]+$/.test(pathOnly(req.path))) return renamed
        return editJson(renamed, (b) =>
          b.status === OWN_STATUS_NAMES.cancelled ? { ...b, status: OWN_STATUS_NAMES.running } : b,
        )
      },
    }
    const summary = await run(declareOwnStatusNames, ['runs.cancel-flushes-approvals'])
    const r = summary.results.find((x) => x.id === 'runs.cancel-flushes-approvals')
    expect(r?.outcome, r?.message).toBe('fail')
    expect(r?.message).toMatch(/status after cancel is in_progress, a live status/)
    expect(summary.verdict?.verdict).toBe('NOT CONFORMANT')
  }, 120_000)
})

describe('a deployment’s run statuses', () => {
  it('places each name by its role, the spec’s two always', () => {
    const s = new RunStatuses({
      running: ['in_progress'],
      paused: ['suspended'],
      succeeded: ['completed', 'done'],
      failed: ['errored'],
      cancelled: ['canceled'],
    })
    expect(['done', 'completed', 'errored', 'canceled'].every((x) => s.terminal(x))).toBe(true)
    expect(['queued', 'awaiting_approval', 'in_progress', 'suspended'].every((x) => s.live(x))).toBe(true)
    expect(s.terminal('succeeded') || s.live('running') || s.known('succeeded')).toBe(false)
    expect(s.settled('suspended') && s.settled('awaiting_approval') && !s.settled('in_progress')).toBe(true)
  })

  it('refuses a name given two roles or one of the spec’s own', () => {
    const base = { running: ['a'], paused: ['b'], succeeded: ['c'], failed: ['d'], cancelled: ['e'] }
    expect(runStatusNamesProblem(base)).toBeUndefined()
    expect(runStatusNamesProblem({ ...base, failed: ['c'] })).toMatch(/"c" is named for both/)
    expect(runStatusNamesProblem({ ...base, paused: ['queued'] })).toMatch(/spec's own/)
  })
})
