/**
 * How far a long mutation run has come, judged by the previous run over the same scope. Stryker's own estimate
 * spreads the mutants left over the average pace so far, which the first sections skew (a whole-scope run read
 * "remaining ~1h 28m" at 40 minutes and ended at 56). The switch runner writes one cost line per run
 * (costs-<pid>.jsonl, one file per worker, wall time included), and a run over the same scope with as many workers
 * takes its mutants in the same order, so the share of the previous run's wall time spent by as many runs is the
 * share of this one done. A run that reaches its end keeps its run times as the guide for the next (`writeGuide`).
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** Each worker's cost lines (costs-<pid>.jsonl), in the order it wrote them; the dry run's included. */
export function readCostLines(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((f) => f.startsWith('costs-') && f.endsWith('.jsonl'))
    .map((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    )
}

/** Each worker's runs (mutant runs and confirmations; not the dry run), in the order it ran them. */
export function readCosts(dir) {
  return withoutDryRun(readCostLines(dir))
}

/** The workers' lines without the dry run's; a worker left with none is dropped. */
export function withoutDryRun(workers) {
  return workers.map((lines) => lines.filter((r) => r.mutant !== 'dry run')).filter((runs) => runs.length > 0)
}

/**
 * Where the guide for a scope and a number of workers is kept (under the reports folder, one file per pair): a quick
 * run over other lines in between does not lose the last whole run's pace.
 */
export function guideFile(out, mutate, concurrency) {
  const key = createHash('sha256').update(JSON.stringify({ mutate, concurrency })).digest('hex').slice(0, 16)
  return join(out, 'pace', `${key}.json`)
}

/** The guide a run that reached its end left: its seconds and each worker's run times; undefined if none. */
export function readGuide(file) {
  if (!existsSync(file)) return undefined
  const { seconds, workers } = JSON.parse(readFileSync(file, 'utf8'))
  return { seconds, costs: workers.map((w) => w.map((wallMs) => ({ wallMs }))) }
}

/** Kept by a run that reached its end, for the next run over the same scope with as many workers. */
export function writeGuide(file, seconds, costs) {
  mkdirSync(dirname(file), { recursive: true })
  const workers = costs.map((w) => w.map((r) => r.wallMs))
  writeFileSync(file, `${JSON.stringify({ seconds: Math.round(seconds), workers })}\n`)
}

const wallOf = (runs) => runs.reduce((t, r) => t + r.wallMs, 0)
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)

/**
 * The projection for a run that has `current` runs per worker: the runs' wall time per worker it will have spent
 * in all, taking the previous run's pace from here on in proportion. Undefined without a previous run, or once this
 * one has run more than the previous run did (it is then no guide).
 */
export function project(current, previous) {
  const runs = current.reduce((t, w) => t + w.length, 0)
  const previousRuns = previous.reduce((t, w) => t + w.length, 0)
  if (runs === 0 || previous.length === 0 || runs >= previousRuns) return undefined
  const perWorker = Math.round(runs / previous.length)
  const previousSoFar = mean(previous.map((w) => wallOf(w.slice(0, perWorker))))
  const previousAll = mean(previous.map(wallOf))
  if (previousSoFar <= 0) return undefined
  const soFar = mean(current.map(wallOf))
  return {
    runs,
    previousRuns,
    /** The share of the previous run's work that as many runs had done. */
    done: previousSoFar / previousAll,
    /** Wall seconds per worker spent in runs so far, and projected in all. */
    wallSeconds: soFar / 1000,
    projectedWallSeconds: (soFar * (previousAll / previousSoFar)) / 1000,
  }
}

const clock = (ms) => new Date(ms).toISOString().slice(11, 16)
/** Minutes and seconds, as `56:06`. */
const minutes = (s) => {
  const whole = Math.round(s)
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`
}

/**
 * One line for the console: runs so far, the share of the previous run's work they stand for, and the projected
 * end (`now` plus the runs' projected wall time still to come; the set-up already spent stays spent).
 */
export function paceLine(projection, startedMs, nowMs, previousSeconds) {
  if (!projection) return undefined
  const left = Math.max(0, projection.projectedWallSeconds - projection.wallSeconds)
  const end = nowMs + left * 1000
  return `conformance:stryker: ${projection.runs} runs in ${minutes((nowMs - startedMs) / 1000)}, ${Math.round(projection.done * 100)} % of the previous run's work over this scope (${minutes(previousSeconds)} in all): projected end ${clock(end)} UTC, ${minutes((end - startedMs) / 1000)} in all`
}
