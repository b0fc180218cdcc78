/**
 * StrykerJS ignorers (`PluginKind.Ignore`, Stryker's public API since 7.1) for whole classes of mutants no
 * conformance check may kill, because the spec says nothing about what they change. Each returns its reason, which
 * Stryker reports on the mutant (status Ignored), and run.mjs counts them as annotated in the per-section table:
 *
 * - `failure-log`: a call reporting a failure nobody waits for to the server's log (`failures.error(...)`,
 *   src/domain/failure-log.ts, or `log.warn(...)` on a pino logger) or the console, and a callback that only makes
 *   such a call. What the server logs is no answer of the API: no spec statement is about it.
 * - `telemetry`: a call that feeds the server's metrics (`telemetry.changed(...)`, `metrics?.messageSent()`,
 *   `ports.telemetry?.readFrom(...)`), and an `if` whose only work is such calls (`if (telemetry) {...}`).
 *   Prometheus figures are the reference's operations profile, never an answer of the API: no spec statement is
 *   about them.
 * - `not-found-words`: the resource a 404's message names (`notFound('Agent')` says "Agent not found"): §7 makes
 *   `error.message` human-readable text and no more, and emptied the word still leaves " not found" to read.
 *
 * Whatever else such a mutant might break (a log call that throws) it breaks only by accident of the mutation
 * (a removed call or an emptied string cannot throw).
 */
import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin'

const LOG_REASON =
  'a log line: what the server logs of a failure nobody waits for is no answer of the API (no spec statement is about it)'
const METRIC_REASON =
  "a metric: the server's Prometheus figures are its operations profile, never an answer of the API (no spec statement is about them)"

/**
 * The names a member chain passes through, outermost last:
 * `this.options.telemetry?.messageSent` -> [this, options, telemetry, messageSent].
 */
function chain(node) {
  const names = []
  let n = node
  while (n) {
    if (n.type === 'MemberExpression' || n.type === 'OptionalMemberExpression') {
      if (!n.computed && n.property.type === 'Identifier') names.unshift(n.property.name)
      n = n.object
    } else if (n.type === 'Identifier') {
      names.unshift(n.name)
      return names
    } else if (n.type === 'ThisExpression') {
      names.unshift('this')
      return names
    } else return names
  }
  return names
}

const isCall = (n) => n?.type === 'CallExpression' || n?.type === 'OptionalCallExpression'

const LOG_LEVELS = ['error', 'warn', 'info', 'debug', 'trace']

/**
 * `failures.error(...)`, `this.failures.error(...)`, `bound.failures.error(...)`, `console.error(...)`, and a line of
 * the server's pino log: `log.warn(...)`, `this.log.info(...)` (Slack clicks refused or ignored, the change feed's
 * reconnects, a socket row's removal that failed).
 */
function isLogCall(n) {
  if (!isCall(n)) return false
  const names = chain(n.callee)
  const [method, owner] = [names.at(-1), names.at(-2)]
  if (owner === 'failures' && method === 'error') return true
  if (owner === 'log' && LOG_LEVELS.includes(method)) return true
  return names.length === 2 && owner === 'console' && ['error', 'warn', 'log', 'info'].includes(method)
}

/**
 * A call on the server's telemetry: `telemetry.x(...)`, `this.telemetry.x(...)`, `metrics?.x(...)`, and the lease
 * counter `leases?.takenOver(...)` (LeaseTelemetry).
 */
function isMetricCall(n) {
  if (!isCall(n)) return false
  const names = chain(n.callee)
  if (names.length >= 2 && names.at(-2) === 'leases' && names.at(-1) === 'takenOver') return true
  return names.length >= 2 && ['telemetry', 'metrics'].includes(names.at(-2))
}

/**
 * A statement that only feeds the metrics: a metric call, a block of such statements, or an `if` without `else`
 * around one (`if (telemetry) { telemetry.attempted(...) }`): its condition decides nothing but what is counted.
 */
function isMetricOnlyStatement(n) {
  if (n?.type === 'ExpressionStatement') return isMetricCall(n.expression)
  if (n?.type === 'BlockStatement') return n.body.length > 0 && n.body.every(isMetricOnlyStatement)
  if (n?.type === 'IfStatement') return !n.alternate && isMetricOnlyStatement(n.consequent)
  return false
}

/** A function whose whole body is one such call: `(err) => failures.error({ err }, '...')`. */
function onlyCalls(n, test) {
  if (n?.type !== 'ArrowFunctionExpression' && n?.type !== 'FunctionExpression') return false
  if (n.body.type !== 'BlockStatement') return test(n.body)
  return (
    n.body.body.length === 1 &&
    n.body.body[0].type === 'ExpressionStatement' &&
    test(n.body.body[0].expression)
  )
}

/** An ignorer of the calls `test` recognises (and of a callback that only makes one), reporting `reason`. */
function callIgnorer(test, reason) {
  return {
    shouldIgnore(path) {
      const n = path.node
      if (test(n) || onlyCalls(n, test)) return reason
      if (n.type === 'ExpressionStatement' && test(n.expression)) return reason
      return undefined
    },
  }
}

export const failureLogIgnorer = callIgnorer(isLogCall, LOG_REASON)

const metricCalls = callIgnorer(isMetricCall, METRIC_REASON)

export const telemetryIgnorer = {
  shouldIgnore(path) {
    return isMetricOnlyStatement(path.node) ? METRIC_REASON : metricCalls.shouldIgnore(path)
  },
}

const WORDS_REASON =
  "the resource a 404's message names: §7 makes error.message human-readable text and no more (the message stays non-empty)"

export const notFoundWordsIgnorer = {
  shouldIgnore(path) {
    const n = path.node
    const parent = path.parent
    if (
      n.type === 'StringLiteral' &&
      isCall(parent) &&
      parent.arguments[0] === n &&
      parent.callee.type === 'Identifier' &&
      parent.callee.name === 'notFound'
    )
      return WORDS_REASON
    return undefined
  },
}

/** The ignorers' names as `ignorers` takes them, in the order they are asked. */
export const IGNORERS = ['failure-log', 'telemetry', 'not-found-words']

/** The reasons these ignorers give: a class of mutants, told apart from a comment's reason (annotations.mjs). */
export const IGNORER_REASONS = new Set([LOG_REASON, METRIC_REASON, WORDS_REASON])

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'failure-log', failureLogIgnorer),
  declareValuePlugin(PluginKind.Ignore, 'telemetry', telemetryIgnorer),
  declareValuePlugin(PluginKind.Ignore, 'not-found-words', notFoundWordsIgnorer),
]
