/**
 * ops/grafana-dashboard.json: every metric its queries name exists on /metrics, every label they match or group by
 * is on the metric it is used with (a renamed metric or label breaks the dashboard silently otherwise), every
 * agentops family has a panel, and every panel reads the data source the dashboard's variable picks.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from '../support/backends.js'
import { families } from './helpers.js'
import { labelProblems, parseQuery } from './promql.js'
import { type ServerWithTraffic, serverWithTraffic } from './traffic.js'

interface Target {
  expr: string
  legendFormat?: string
  datasource?: { type: string; uid: string }
}

interface Panel {
  type: string
  title: string
  targets?: Target[]
  datasource?: { type: string; uid: string }
}

interface Variable {
  name: string
  type: string
  query?: string
}

const dashboard = JSON.parse(
  readFileSync(new URL('../../ops/grafana-dashboard.json', import.meta.url), 'utf8'),
) as { panels: Panel[]; uid: string; templating?: { list?: Variable[] } }
const targets = dashboard.panels.flatMap((p) => p.targets ?? [])
const exprs = targets.map((t) => t.expr)
const METRIC = /\b(?:agentops|nodejs|process)_[a-z0-9_]+\b/g
const named = new Set(exprs.flatMap((e) => e.match(METRIC) ?? []))

/** A histogram's series carry suffixes its family name (the `# TYPE` line) does not. */
function family(name: string, declared: Set<string>): string | undefined {
  if (declared.has(name)) return name
  const base = name.replace(/_(bucket|sum|count)$/, '')
  return declared.has(base) ? base : undefined
}

/** Series only a PostgreSQL store has (statements are timed on PostgreSQL's path): absent on SQLite. */
const POSTGRES_ONLY = new Set(['agentops_store_statement_duration_seconds_bucket'])

describe.each(backends())('the Grafana dashboard, against a server on $name', (backend) => {
  let live: ServerWithTraffic
  let declared: Set<string>
  beforeAll(async () => {
    live = await serverWithTraffic(await backend.freshUrl())
    declared = families(live.text)
  })
  afterAll(() => live?.close())

  it('queries only metrics the server exposes', () => {
    expect(named.size).toBeGreaterThan(20)
    const missing = [...named].filter((name) => family(name, declared) === undefined)
    expect(missing).toEqual([])
    // The same metrics as the PromQL reading of the queries finds (which the label checks below rely on).
    expect(new Set(exprs.flatMap((e) => parseQuery(e).metrics))).toEqual(named)
  })

  it('has a panel for every agentops metric family', () => {
    const shown = new Set([...named].map((n) => family(n, declared)))
    const unshown = [...declared].filter((f) => f.startsWith('agentops_') && !shown.has(f))
    expect(unshown).toEqual([])
  })

  it('matches and groups only by labels the metric carries on a live scrape', () => {
    const used = new Set<string>()
    const problems: string[] = []
    for (const expr of exprs) {
      for (const use of parseQuery(expr).labels) used.add(use.label)
      if (backend.name === 'sqlite' && parseQuery(expr).metrics.some((m) => POSTGRES_ONLY.has(m))) continue
      problems.push(...labelProblems(expr, live.series))
    }
    expect(problems).toEqual([])
    // The reading found the labels the panels are about (it cannot pass by reading none).
    expect([...used]).toEqual(
      expect.arrayContaining([
        'method',
        'route',
        'status_class',
        'le',
        'code',
        'tier',
        'outcome',
        'status',
        'decision',
        'result',
        'transport',
        'topic',
        'path',
        'state',
      ]),
    )
  })
})

describe('the Grafana dashboard file', () => {
  it("names in each legend only labels its query's result keeps", () => {
    const problems: string[] = []
    for (const target of targets) {
      const kept = new Set(parseQuery(target.expr).groupedBy.filter((l) => l !== 'le'))
      for (const m of (target.legendFormat ?? '').matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)) {
        if (!kept.has(m[1] as string)) problems.push(`{{${m[1]}}} is not kept by ${target.expr}`)
      }
    }
    expect(problems).toEqual([])
  })

  it('is an importable dashboard: a uid, titled panels, a Prometheus data source variable', () => {
    expect(dashboard.uid).toBe('agentops-reference')
    for (const p of dashboard.panels) expect(p.title).not.toBe('')
    expect(exprs.length).toBeGreaterThan(20)

    const variables = dashboard.templating?.list ?? []
    const sources = variables.filter((v) => v.type === 'datasource' && v.query === 'prometheus')
    expect(sources).toHaveLength(1)
    const chosen = `\${${sources[0]?.name}}`
    // Every panel with queries (and any query naming its own) reads the data source the variable picks.
    const wrong: string[] = []
    for (const p of dashboard.panels) {
      if (!p.targets?.length) continue
      const own = p.targets.filter((t) => t.datasource !== undefined).map((t) => t.datasource)
      for (const ds of [p.datasource, ...own]) {
        if (ds?.type !== 'prometheus' || ds.uid !== chosen) wrong.push(`${p.title}: ${JSON.stringify(ds)}`)
      }
    }
    expect(wrong).toEqual([])
  })

  it('shows each query once', () => {
    const seen = new Map<string, string>()
    const repeated: string[] = []
    for (const p of dashboard.panels) {
      if (!p.targets?.length) continue
      const key = p.targets
        .map((t) => t.expr)
        .sort()
        .join('\n')
      const first = seen.get(key)
      if (first !== undefined) repeated.push(`${p.title} repeats ${first}`)
      else seen.set(key, p.title)
    }
    expect(repeated).toEqual([])
  })
})
