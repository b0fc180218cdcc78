/**
 * Runs the selected checks in order against one deployment and undoes what they created. A check marked `overlap`
 * (it mostly waits on the deployment's clock) runs alongside the checks after it, and so do the checks of a `lane`, one
 * after another; every such check has finished before the sweep checks judge the run's traffic, and results are
 * reported in check order whatever finished first.
 */

import { AsyncLocalStorage } from 'node:async_hooks'
import { setMaxListeners } from 'node:events'
import type { Check, CheckContext, OpenedSocket, SeenExchange } from './check.js'
import { family, isSweep } from './check.js'
import { type SuiteConfig, tokenName } from './config.js'
import type { Contract, ContractViolation } from './contract.js'
import { CoverageRecorder } from './coverage.js'
import { fixFor, type RunFindings } from './fix.js'
import { Fixtures } from './fixtures.js'
import { PROFILE_GAPS } from './gaps.js'
import { BudgetExceeded, fingerprint, HttpClient, RequestBudget, TransportError } from './http.js'
import { loopWatch } from './loop-watch.js'
import { Pacer } from './pacing.js'
import type { WebhookReceiver } from './receiver.js'
import {
  CheckNotApplicable,
  type CheckResult,
  CheckSkipped,
  type Exchange,
  type RunSummary,
} from './types.js'
import { wakeSleepers } from './wait.js'

interface Current {
  id: string
  exchanges: Exchange[]
  /** Parts of the check that could not run (`ctx.partial`). */
  partial: string[]
}

export interface RunOptions {
  config: SuiteConfig
  checks: Check[]
  contract: Contract
  receiver?: WebhookReceiver
  onResult?: (result: CheckResult, index: number, total: number) => void
  log?: (line: string) => void
  /** Per-check time limit, ms. */
  checkTimeoutMs?: number
  /** Pacing from the deployment's rate-limit headers (default: a new one from the config). */
  pacer?: Pacer
  /** Aborted (its reason a sentence naming the setting: --deadline, an interrupt): checks not begun are skipped. */
  signal?: AbortSignal
  /** What the run learnt before the checks (the receiver's URL refused), for each failure's fix. */
  findings?: RunFindings
  /**
   * false: leave what the checks created (default true). For a deployment thrown away with its store right after
   * the run (`--reference`), where undoing hundreds of registrations is only wall time.
   */
  cleanup?: boolean
  /**
   * Aborted (its reason a sentence: `--bail --strict-profile` once a profile check failed) to end the profile checks
   * alone: those not begun are skipped, those under way cut short; core checks and the sweep go on.
   */
  profileSignal?: AbortSignal
}

export function selectChecks(checks: Check[], only: string[], skip: string[] = []): Check[] {
  const matches = (c: Check, prefixes: string[]) => prefixes.some((p) => c.id === p || c.id.startsWith(p))
  return checks.filter((c) => (only.length === 0 || matches(c, only)) && !matches(c, skip))
}

/**
 * The order a `--bail` run takes: core checks first, so the first core failure comes before the profile checks'
 * waits, then profile checks; the sweep family (it judges every exchange of the run) last, in its own order.
 * Within each group the checks named in `first` (`--first`) come first, in its order, then the suite's order stands.
 */
export function coreFirst(checks: Check[], first: readonly string[] = []): Check[] {
  const rank = new Map(first.map((id, i) => [id, i]))
  const ordered = (group: Check[]) => [
    ...group.filter((c) => rank.has(c.id)).sort((a, b) => (rank.get(a.id) ?? 0) - (rank.get(b.id) ?? 0)),
    ...group.filter((c) => !rank.has(c.id)),
  ]
  const sweep = checks.filter(isSweep)
  const rest = checks.filter((c) => !isSweep(c))
  return [
    ...ordered(rest.filter((c) => c.level === 'core')),
    ...ordered(rest.filter((c) => c.level !== 'core')),
    ...sweep,
  ]
}

/**
 * Which check an exchange belongs to: the check whose code (or whose awaited fixture) sent it, also when checks
 * overlap. One for the process, not one per run: on Node 20 every AsyncLocalStorage ever entered stays in a list
 * that each new promise and async resource walks, so a process that runs the suite again and again (the mutation
 * runner's workers, a thousand runs each) paid, per run, for every run before it. Each run's store is its own
 * check's record, and a run reads only the stores its own checks set.
 */
const running = new AsyncLocalStorage<Current>()

export async function runChecks(options: RunOptions): Promise<RunSummary> {
  const { config, contract } = options
  const log = options.log ?? (() => {})
  // Every check under way listens to the run's signal once (withTimeout), and so does every request in flight
  // (wire.ts), each removing its listener when done: a check sending seventeen requests at once holds more than Node's
  // default of ten, which is no leak. The count follows the run's concurrency, so Node's leak warning is off for them.
  for (const signal of [options.signal, options.profileSignal]) if (signal) setMaxListeners(0, signal)
  const startedAt = new Date().toISOString()
  const budget = new RequestBudget(config.budget)
  // A timeout then says whether this process's own loop was blocked meanwhile (the watch's timer is unreferenced).
  const releaseWatch = loopWatch.acquire()
  wakeSleepers(false)
  const seen: SeenExchange[] = []
  const violations: ContractViolation[] = []
  let outside: Current = { id: 'setup', exchanges: [], partial: [] }
  const current = (): Current => running.getStore() ?? outside
  const authenticated = new Set(
    [
      config.tokens.primary,
      config.tokens.secondWorkspace,
      config.tokens.narrowScope,
      config.tokens.otherScope,
      config.tokens.runsOnly,
      config.tokens.rateLimited,
      config.tokens.rateLimitedPeer,
      config.tokens.quotaLimited,
      config.tokens.standardTier,
      config.tokens.proTier,
    ]
      .filter((t): t is string => typeof t === 'string' && t !== '')
      .map(fingerprint),
  )

  const coverage = new CoverageRecorder(
    contract,
    new Set([config.tokens.expired, config.tokens.revoked].flatMap((t) => (t ? [fingerprint(t)] : []))),
  )
  const deliveriesBefore = options.receiver?.deliveries.length ?? 0
  const pacer = options.pacer ?? new Pacer(config)
  // The rate-limit checks drive these into their limit on purpose.
  for (const t of [config.tokens.rateLimited, config.tokens.rateLimitedPeer])
    if (t) pacer.exemptToken(fingerprint(t))
  const http = new HttpClient({
    baseUrl: config.baseUrl,
    token: config.tokens.primary,
    budget,
    timeoutMs: config.timeoutMs,
    pacer,
    ...(options.signal ? { signal: options.signal } : {}),
    observers: [
      coverage.observe,
      (exchange, response) => {
        const owner = current()
        owner.exchanges.push(exchange)
        if (config.verbose)
          log(`    ${exchange.method} ${exchange.url} → ${exchange.status ?? exchange.error}`)
        if (!response) return
        const isAuthenticated =
          exchange.tokenFingerprint !== undefined &&
          authenticated.has(exchange.tokenFingerprint) &&
          /^Bearer \S/.test(exchange.requestHeaders.authorization ?? '')
        seen.push({
          checkId: owner.id,
          exchange,
          response,
          authenticated: isAuthenticated,
          answeredAt: performance.now(),
        })
        const path = new URL(exchange.url).pathname
        // A request the suite sent off the documented surface on purpose (an unknown route, another version, a
        // method the path does not serve) has no documented answer to hold the response to: coverage counts it.
        if (!contract.find(exchange.method, path)) return
        const problem = contract.checkResponse(
          exchange.method,
          path,
          response.status,
          response.body,
          response.headers['content-type'] ?? '',
        )
        if (problem)
          violations.push({ method: exchange.method, path, status: response.status, message: problem })
      },
    ],
  })

  const undo: Array<{ label: string; run: (http: HttpClient) => Promise<unknown> }> = []
  // Sockets the checks opened and have not closed yet, with the check that opened each.
  const sockets = new Map<OpenedSocket, string>()
  let checksEnded = false
  let counter = 0
  const ctx: CheckContext = {
    config,
    http,
    as(role) {
      const token = config.tokens[role]
      if (!token) throw new CheckSkipped(`no ${tokenName(role)} given`)
      return http.withToken(token)
    },
    contract,
    // Fixtures reach the context through this thunk, called only once checks run.
    fx: new Fixtures(() => ctx),
    receiver: options.receiver,
    name: (label) => `${config.prefix}${label}-${++counter}`,
    cleanup: (label, run) => undo.push({ label, run }),
    seen,
    coverage,
    violations,
    log,
    partial(reason) {
      const owner = current()
      if (!owner.partial.includes(reason)) owner.partial.push(reason)
    },
    opened(socket) {
      if (checksEnded) return socket.terminate()
      sockets.set(socket, current().id)
      socket.once('close', () => sockets.delete(socket))
    },
  }

  const results: Array<CheckResult | undefined> = []
  const total = options.checks.length
  // After a few checks in a row die on the transport, probe once per check instead of waiting out every timeout.
  let transportFailures = 0
  const runOne = async (check: Check, index: number): Promise<void> => {
    const mine: Current = { id: check.id, exchanges: [], partial: [] }
    const started = performance.now()
    let outcome: CheckResult['outcome'] = 'pass'
    let message: string | undefined
    let notApplicable = false
    const signals = [
      options.signal,
      check.level === 'profile' && !isSweep(check) ? options.profileSignal : undefined,
    ].filter((s): s is AbortSignal => s !== undefined)
    try {
      const ended = signals.find((s) => s.aborted)
      if (ended) throw new CheckSkipped(`not run: ${String(ended.reason)}`)
      if (transportFailures >= 3 && !(await answers(config))) {
        throw new Error(
          `not run: ${config.baseUrl} stopped answering (${transportFailures} checks in a row failed on the transport)`,
        )
      }
      await running.run(mine, () =>
        withTimeout(
          check.run(ctx),
          options.checkTimeoutMs ?? Math.max(60_000, config.waitMs * 3),
          check.id,
          signals,
        ),
      )
      transportFailures = 0
      // Nothing it judged failed, but a part of it did not run: it must not read as a pass.
      if (mine.partial.length > 0) {
        outcome = 'partial'
        message = mine.partial.join('; ')
      }
    } catch (err) {
      if (err instanceof TransportError || String((err as Error).message).startsWith('not run:'))
        transportFailures++
      else transportFailures = 0
      if (err instanceof CheckSkipped) {
        outcome = 'skip'
        message = err.message
        notApplicable = err instanceof CheckNotApplicable
      } else {
        outcome = 'fail'
        const e = err as Error
        message =
          e instanceof BudgetExceeded || e.name === 'CheckFailure' || e.message.startsWith('not run:')
            ? e.message
            : `${e.name}: ${e.message}`
      }
    }
    const result: CheckResult = {
      id: check.id,
      title: check.title,
      level: check.level,
      family: family(check.id),
      clauses: check.clauses,
      ...(check.level === 'profile' && PROFILE_GAPS[check.id] ? { gap: PROFILE_GAPS[check.id] } : {}),
      outcome,
      ...(message !== undefined ? { message } : {}),
      ...(notApplicable ? { notApplicable } : {}),
      exchanges: outcome === 'fail' ? mine.exchanges.slice(-3) : [],
      durationMs: Math.round(performance.now() - started),
    }
    const fix = fixFor(result, options.findings)
    if (fix) result.fix = fix
    results[index] = result
    options.onResult?.(result, index, total)
  }
  const overlapping = new Set<Promise<void>>()
  /** Each lane's last check: the next one of that lane starts once it has ended. */
  const lanes = new Map<string, Promise<void>>()
  for (const [index, check] of options.checks.entries()) {
    // The sweep checks judge every exchange of the run: everything still running finishes first.
    if (isSweep(check)) await Promise.all(overlapping)
    const lane = check.lane
    const done =
      lane === undefined
        ? runOne(check, index)
        : (lanes.get(lane) ?? Promise.resolve()).then(() => runOne(check, index))
    if (lane !== undefined) lanes.set(lane, done)
    if (check.overlap || lane !== undefined) {
      overlapping.add(done)
      void done.finally(() => overlapping.delete(done))
    } else await done
  }
  await Promise.all(overlapping)
  // A check that outlived its time limit goes on in the background: it may send nothing more, and what it (or a
  // check that failed before its `finally`) left open is closed now, so nothing keeps the process alive.
  checksEnded = true
  budget.end()
  releaseWatch()
  if (options.signal?.aborted) wakeSleepers()
  // A socket its check closed or terminated may not have emitted its close yet: closing, it was not left open.
  const leftOpen = [...sockets].filter(([socket]) => socket.readyState < 2)
  if (leftOpen.length > 0)
    log(
      `teardown: closed ${leftOpen.length} socket(s) left open by ${[...new Set(leftOpen.map(([, id]) => id))].join(', ')}`,
    )
  for (const socket of sockets.keys()) socket.terminate()
  sockets.clear()

  // Cleanup has its own client with its own small allowance, handed to each undo step: the checks' clients send
  // nothing more once the checks end, and an exhausted budget must not leave resources behind.
  outside = { id: 'cleanup', exchanges: [], partial: [] }
  const cleanupBudget = new RequestBudget(undo.length * 2 + 10)
  const cleanupHttp = new HttpClient({
    baseUrl: config.baseUrl,
    token: config.tokens.primary,
    budget: cleanupBudget,
    timeoutMs: config.timeoutMs,
  })
  let failedUndo = 0
  let firstFailure = ''
  // Newest first, a few at a time: undo steps are independent deletions, and hundreds of them one by one (the
  // pagination checks' tools) would be most of a run's wall time.
  const steps = options.cleanup === false ? [] : undo.reverse()
  for (let i = 0; i < steps.length; i += 8) {
    const batch = steps.slice(i, i + 8)
    const outcomes = await Promise.allSettled(batch.map((step) => step.run(cleanupHttp)))
    outcomes.forEach((o, j) => {
      if (o.status === 'fulfilled') return
      failedUndo++
      firstFailure ||= `${batch[j]?.label}: ${String(o.reason)}`
    })
  }
  if (failedUndo > 0)
    log(`cleanup: ${failedUndo} of ${undo.length} steps failed (the first: ${firstFailure})`)

  for (const d of options.receiver?.deliveries.slice(deliveriesBefore) ?? []) coverage.event(d.body)

  return {
    startedAt,
    finishedAt: new Date().toISOString(),
    baseUrl: config.baseUrl,
    seed: config.seed,
    requestsUsed: budget.used + cleanupBudget.used,
    results: results.filter((r): r is CheckResult => r !== undefined),
    pacedMs: pacer.waitedMs,
    coverage: coverage.report(),
  }
}

/** One cheap request with a short timeout: is the deployment still there? */
async function answers(config: SuiteConfig): Promise<boolean> {
  try {
    await fetch(`${config.baseUrl}/v1/agents?limit=1`, {
      headers: { authorization: `Bearer ${config.tokens.primary}` },
      signal: AbortSignal.timeout(2000),
    })
    return true
  } catch {
    return false
  }
}

/**
 * The check's outcome, or a failure when it outlives its time limit, or a skip when one of `signals` is aborted
 * meanwhile (the run's, or the one ending the profile checks).
 */
async function withTimeout<T>(p: Promise<T>, ms: number, id: string, signals: AbortSignal[]): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const listeners: Array<[AbortSignal, () => void]> = []
  try {
    return await Promise.race([
      p,
      new Promise<T>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${id} did not finish within ${ms} ms`)), ms)
        for (const signal of signals) {
          const onAbort = () => reject(new CheckSkipped(`cut short: ${String(signal.reason)}`))
          signal.addEventListener('abort', onAbort, { once: true })
          listeners.push([signal, onAbort])
        }
      }),
    ])
  } finally {
    clearTimeout(timer)
    for (const [signal, onAbort] of listeners) signal.removeEventListener('abort', onAbort)
  }
}
