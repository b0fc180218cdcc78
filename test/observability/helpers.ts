/**
 * Reading Prometheus text exposition in tests (series with their labels, and the metric families declared), and
 * the request log line's documented fields.
 */

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

/** The value of one series, 0 when absent. */
export function seriesValue(series: Series[], name: string, labels: Record<string, string> = {}): number {
  const hit = series.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )
  return hit?.value ?? 0
}
