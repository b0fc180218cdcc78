/**
 * README's alert table (Operating, "What to alert on"): every metric its PromQL names is on /metrics of a server
 * that saw some traffic, with every label the expression matches or groups by. An alert on a renamed metric or
 * label never fires, and nothing says so.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { labelProblems, parseQuery } from './promql.js'
import { type ServerWithTraffic, serverWithTraffic } from './traffic.js'

/** Series Prometheus makes itself for every target it scrapes (`up`), never on /metrics. */
const SYNTHESIZED = new Set(['up'])

/** The lines of a Markdown section: from its heading to the next heading of its level or above. */
function section(lines: string[], heading: string): string[] {
  const start = lines.indexOf(heading)
  if (start < 0) throw new Error(`README has no "${heading}"`)
  const level = /^#+/.exec(heading)?.[0].length ?? 0
  const end = lines.findIndex(
    (l, i) => i > start && /^#+ /.test(l) && (/^#+/.exec(l)?.[0].length ?? 0) <= level,
  )
  return lines.slice(start + 1, end < 0 ? undefined : end)
}

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').split('\n')
const table = section(section(readme, '## Operating'), '### What to alert on').filter((l) =>
  l.startsWith('|'),
)
const cellsOf = (row: string) =>
  row
    .split('|')
    .slice(1, -1)
    .map((c) => c.trim())
const header = cellsOf(table[0] ?? '')
/** The columns that hold PromQL: the expression, and the threshold (which may add a condition of its own). */
const PROMQL_COLUMNS = ['Expression (PromQL)', 'Threshold'].map((name) => header.indexOf(name))
/** The table's rows after its header and separator, each with the PromQL of its expression and threshold. */
const alerts = table.slice(2).map((row) => {
  const cells = cellsOf(row)
  const spans = PROMQL_COLUMNS.flatMap((i) =>
    [...(cells[i] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1] as string),
  )
  return {
    name: cells[0] ?? '',
    // Not PromQL: the probe's path (`/readyz`) and setting names (`AGENTOPS_RUN_CONCURRENCY`).
    exprs: spans.filter((s) => !s.startsWith('/') && !/^[A-Z][A-Z0-9_]*$/.test(s)),
  }
})

describe("README's alert expressions against a live scrape", () => {
  let live: ServerWithTraffic
  beforeAll(async () => {
    live = await serverWithTraffic()
  })
  afterAll(() => live?.close())

  it('reads the table: every alert has a PromQL expression', () => {
    expect(header[0]).toBe('Alert')
    expect(PROMQL_COLUMNS.every((i) => i > 0)).toBe(true)
    expect(alerts.length).toBeGreaterThanOrEqual(10)
    for (const alert of alerts) expect(alert.exprs.length, alert.name).toBeGreaterThan(0)
  })

  it('names only metrics the server exposes', () => {
    const exposed = new Set(live.series.map((s) => s.name))
    const named = new Set(alerts.flatMap((a) => a.exprs.flatMap((e) => parseQuery(e).metrics)))
    const missing = [...named].filter((m) => !exposed.has(m) && !SYNTHESIZED.has(m))
    expect(missing).toEqual([])
    // The reading found the metrics the alerts are about (it cannot pass by reading none).
    expect([...named]).toEqual(
      expect.arrayContaining([
        'agentops_http_request_duration_seconds_count',
        'agentops_http_request_duration_seconds_bucket',
        'agentops_runs',
        'agentops_webhook_outbox_oldest_age_seconds',
        'agentops_webhook_deliveries_given_up_total',
        'nodejs_eventloop_lag_p99_seconds',
      ]),
    )
    expect(named.size).toBeGreaterThanOrEqual(12)
  })

  it('matches and groups only by labels (and matched values) the metric carries', () => {
    const problems = alerts.flatMap((a) => a.exprs.flatMap((e) => labelProblems(e, live.series)))
    expect(problems).toEqual([])
    const used = new Set(
      alerts.flatMap((a) => a.exprs.flatMap((e) => parseQuery(e).labels.map((l) => l.label))),
    )
    expect([...used].sort()).toEqual(['le', 'route', 'status', 'status_class'])
  })
})
