/**
 * What a PromQL expression names: its metrics, the labels it matches on (`{status="queued"}`) and the labels it
 * groups by (`sum by (le, route) (...)`), each with the metrics it applies to. Enough PromQL for the expressions
 * of ops/grafana-dashboard.json and README's alert table; anything it does not handle (postfix `by`, `on`,
 * `ignoring`, `group_left`) throws instead of being skipped, so a check built on it cannot pass by not looking.
 */
import { STATUS_CLASSES } from '../../src/observability/metrics.js'
import { labelNamesOf, type Series } from './helpers.js'

export interface LabelUse {
  label: string
  /** `matcher`: in a selector, with the value matched (`=` only, else undefined); `grouping`: in `by`/`without`. */
  kind: 'matcher' | 'grouping'
  value?: string | undefined
  /** The metrics the label must be on: the selector's metric, or every metric inside the aggregation. */
  metrics: string[]
}

export interface QueryNames {
  metrics: string[]
  labels: LabelUse[]
  /** The labels of every `by (...)` clause: the labels the result can carry. */
  groupedBy: string[]
}

const IDENT = /[a-zA-Z_:][a-zA-Z0-9_:]*/y
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset'])
const UNSUPPORTED = /\b(on|ignoring|group_left|group_right)\s*\(/
const MATCHER = /([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?/g

/** The index of the parenthesis closing the one at `open`. */
function closing(expr: string, open: number): number {
  let depth = 0
  for (let i = open; i < expr.length; i++) {
    if (expr[i] === '(') depth++
    else if (expr[i] === ')' && --depth === 0) return i
  }
  throw new Error(`unbalanced parentheses in ${expr}`)
}

/** Metric names in an expression whose selectors' braces, ranges and grouping clauses are already removed. */
function metricsIn(bare: string): string[] {
  const out: string[] = []
  let i = 0
  while (i < bare.length) {
    const c = bare[i] as string
    if (/[0-9.]/.test(c)) {
      const m = /^[0-9.]+(?:e[+-]?[0-9]+)?/i.exec(bare.slice(i))
      i += m ? m[0].length : 1
      continue
    }
    IDENT.lastIndex = i
    const m = IDENT.exec(bare)
    if (!m) {
      i++
      continue
    }
    i += m[0].length
    const isCall = /^\s*\(/.test(bare.slice(i))
    if (!isCall && !KEYWORDS.has(m[0])) out.push(m[0])
  }
  return out
}

export function parseQuery(expr: string): QueryNames {
  if (UNSUPPORTED.test(expr)) throw new Error(`vector matching is not handled here: ${expr}`)
  const labels: LabelUse[] = []
  // Selectors with braces: the metric before them and the label names inside.
  let work = expr.replace(
    /([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}/g,
    (_all, metric: string, body: string) => {
      if (!metric) throw new Error(`a selector without a metric name is not handled here: ${expr}`)
      const rest = body.replace(MATCHER, (_m, label: string, op: string, value: string) => {
        labels.push({ label, kind: 'matcher', value: op === '=' ? value : undefined, metrics: [metric] })
        return ''
      })
      if (rest.trim() !== '') throw new Error(`unreadable matchers {${body}} in ${expr}`)
      return metric
    },
  )
  // Range and subquery selectors, Grafana's $__rate_interval included.
  work = work.replace(/\[[^\]]*\]/g, '')
  if (/\)\s*(by|without)\s*\(/.test(work)) throw new Error(`postfix grouping is not handled here: ${expr}`)
  // Grouping clauses, innermost aggregation last: each applies to every metric of the argument that follows it.
  const groupedBy: string[] = []
  const CLAUSE = /\b(by|without)\s*\(([^)]*)\)\s*/g
  for (const m of work.matchAll(CLAUSE)) {
    const names = (m[2] as string)
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
    const open = (m.index as number) + m[0].length
    if (work[open] !== '(') throw new Error(`no aggregation argument after ${m[0]} in ${expr}`)
    const argument = work.slice(open, closing(work, open) + 1).replace(CLAUSE, '')
    const metrics = metricsIn(argument)
    if (metrics.length === 0) throw new Error(`no metric inside ${m[0]}(...) in ${expr}`)
    for (const label of names) labels.push({ label, kind: 'grouping', metrics })
    if (m[1] === 'by') groupedBy.push(...names)
  }
  const metrics = [...new Set(metricsIn(work.replace(CLAUSE, '')))]
  return { metrics, labels, groupedBy }
}

/** Labels Prometheus itself attaches to every series of a target when it scrapes: never on /metrics. */
export const TARGET_LABELS: ReadonlySet<string> = new Set(['instance', 'job'])

/**
 * Label values the server binds on first use, so a scrape shows them only once one happened: the values a query
 * may match without the scrape showing them, taken from the server's own vocabulary.
 */
const BOUND_ON_FIRST_USE: Record<string, readonly string[]> = { status_class: STATUS_CLASSES }

/**
 * What of `expr` a scrape does not back, as readable lines: a label it matches or groups by that the metric it is
 * used with does not carry, or a value it matches (`=`) that the metric never shows (nor binds on first use).
 */
export function labelProblems(expr: string, series: Series[]): string[] {
  const problems: string[] = []
  for (const use of parseQuery(expr).labels) {
    if (TARGET_LABELS.has(use.label)) continue
    for (const metric of use.metrics) {
      if (!labelNamesOf(series, metric).has(use.label)) {
        problems.push(`${metric} has no label ${use.label} (${expr})`)
        continue
      }
      if (use.value === undefined) continue
      const seen = series.some((s) => s.name === metric && s.labels[use.label] === use.value)
      if (!seen && !BOUND_ON_FIRST_USE[use.label]?.includes(use.value))
        problems.push(`${metric} never has ${use.label}="${use.value}" (${expr})`)
    }
  }
  return problems
}
