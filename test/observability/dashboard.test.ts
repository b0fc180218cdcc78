/**
 * ops/grafana-dashboard.json: every metric its queries name exists on /metrics (a renamed metric breaks the
 * dashboard silently otherwise), and every agentops family has a panel.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'
import { families } from './helpers.js'

interface Panel {
  type: string
  title: string
  targets?: { expr: string }[]
}

const dashboard = JSON.parse(
  readFileSync(new URL('../../ops/grafana-dashboard.json', import.meta.url), 'utf8'),
) as { panels: Panel[]; uid: string }
const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr))
const METRIC = /\b(?:agentops|nodejs|process)_[a-z0-9_]+\b/g
const named = new Set(exprs.flatMap((e) => e.match(METRIC) ?? []))

/** A histogram's series carry suffixes its family name (the `# TYPE` line) does not. */
function family(name: string, declared: Set<string>): string | undefined {
  if (declared.has(name)) return name
  const base = name.replace(/_(bucket|sum|count)$/, '')
  return declared.has(base) ? base : undefined
}

describe('the Grafana dashboard', () => {
  let t: TestServer
  let declared: Set<string>
  beforeAll(async () => {
    t = await startTestServer()
    declared = families(await (await fetch(`${t.baseUrl}/metrics`)).text())
  })
  afterAll(() => t.close())

  it('queries only metrics the server exposes', () => {
    expect(named.size).toBeGreaterThan(20)
    const missing = [...named].filter((name) => family(name, declared) === undefined)
    expect(missing).toEqual([])
  })

  it('has a panel for every agentops metric family', () => {
    const shown = new Set([...named].map((n) => family(n, declared)))
    const unshown = [...declared].filter((f) => f.startsWith('agentops_') && !shown.has(f))
    expect(unshown).toEqual([])
  })

  it('is an importable dashboard: a uid, titled panels, a Prometheus data source variable', () => {
    expect(dashboard.uid).toBe('agentops-reference')
    for (const p of dashboard.panels) expect(p.title).not.toBe('')
    expect(exprs.length).toBeGreaterThan(20)
  })
})
