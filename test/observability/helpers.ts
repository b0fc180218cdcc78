/**
 * Reading Prometheus text exposition in tests (series with their labels, and the metric families declared), and
 * the request log line's documented fields.
 */
import { expect } from 'vitest'

/** The fields of a request log line (README, Operating), sorted. */
export const REQUEST_LOG_FIELDS = [
  'level',
  'time',
  'pid',
  'req_id',
  'method',
  'route',
  'status',
  'duration_ms',
  'workspace_id',
  'key_id',
  'msg',
].sort()

export interface Series {
  name: string
  labels: Record<string, string>
  value: number
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export function parseSeries(text: string): Series[] {
  const out: Series[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = LINE.exec(line)
    if (!m) throw new Error(`not an exposition line: ${line}`)
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] as string] = l[2] as string
    out.push({ name: m[1] as string, labels, value: Number(m[3]) })
  }
  return out
}

/** Metric families declared with `# TYPE` (present even before their first observation). */
export function families(text: string): Set<string> {
  const names = new Set<string>()
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) names.add(m[1] as string)
  return names
}

/** `GET {url}/metrics` as Prometheus scrapes it: 200, the text format, parsed. */
export async function scrape(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ text: string; series: Series[] }> {
  const res = await fetch(`${url}/metrics`, { headers })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
  const text = await res.text()
  return { text, series: parseSeries(text) }
}

function describeSeries(name: string, labels: Record<string, string>): string {
  const shown = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  return shown.length > 0 ? `${name}{${shown.join(',')}}` : name
}

/** The series of `name` whose labels include `labels` (a subset match). */
function matching(series: Series[], name: string, labels: Record<string, string>): Series[] {
  return series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
}

function one(series: Series[], name: string, labels: Record<string, string>): Series | undefined {
  const hits = matching(series, name, labels)
  if (hits.length > 1) {
    const found = hits.map((s) => describeSeries(s.name, s.labels)).join(', ')
    throw new Error(
      `${describeSeries(name, labels)} matches ${hits.length} series (${found}): name more labels`,
    )
  }
  return hits[0]
}

/**
 * The value of the one series of `name` whose labels include `labels`. Throws when no series matches (the metric
 * or that label value was never emitted: a 0 would hide it) or when several do (the labels do not pick one).
 */
export function seriesValue(series: Series[], name: string, labels: Record<string, string> = {}): number {
  const hit = one(series, name, labels)
  if (!hit) {
    const sameName = series.filter((s) => s.name === name).map((s) => describeSeries(s.name, s.labels))
    throw new Error(
      `no series ${describeSeries(name, labels)} in the scrape` +
        (sameName.length > 0
          ? ` (${name} has: ${sameName.join(', ')})`
          : ` (no series named ${name} at all)`),
    )
  }
  return hit.value
}

/**
 * Like `seriesValue`, but 0 when no series matches: only for series a server legitimately creates on first use
 * (a label value bound when it first happens, such as an error code or a status class), never for one it is
 * meant to show from the start.
 */
export function optionalSeriesValue(
  series: Series[],
  name: string,
  labels: Record<string, string> = {},
): number {
  return one(series, name, labels)?.value ?? 0
}

/** The label names the series of `name` carry in a scrape (empty when there is no such series). */
export function labelNamesOf(series: Series[], name: string): Set<string> {
  return new Set(series.filter((s) => s.name === name).flatMap((s) => Object.keys(s.labels)))
}
