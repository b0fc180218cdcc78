/** `agentops-conformance`: resolves settings, checks they work, runs the checks, writes the reports, exits 0/1/2. */
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ALL_CHECKS } from './checks/index.js'
import {
  BUNDLED_CONTRACT,
  helpText,
  PACKAGE_ROOT,
  requireTarget,
  resolveConfig,
  type SuiteConfig,
  settingName,
  type TokenKey,
  tokenName,
} from './config.js'
import { Contract } from './contract.js'
import { EMBEDDED_CONTRACT, EMBEDDED_VERSION } from './embedded.js'
import type { RunFindings } from './fix.js'
import { HttpClient, type HttpResponse, obj, RequestBudget, TransportError } from './http.js'
import { runInit } from './init.js'
import { type LocalNats, natsTarget, startLocalNats } from './nats.js'
import { Pacer } from './pacing.js'
import { formatPlan, planFor } from './plan.js'
import { freePort } from './ports.js'
import { provision, withProvisioned } from './provision.js'
import { hostAndPort, receiverAdvice, WebhookReceiver } from './receiver.js'
import {
  REFERENCE_REPLAY_WINDOW,
  REFERENCE_WEBHOOK_MAX_ATTEMPTS,
  type ReferenceServer,
  startReference,
} from './reference.js'
import { toJson } from './report/json.js'
import { toJunit } from './report/junit.js'
import { toMarkdown } from './report/markdown.js'
import { formatResult, formatSummary } from './report/text.js'
import { coreFirst, runChecks, selectChecks } from './runner.js'
import { coverage } from './traceability.js'
import { type CheckResult, ConfigError, type RunSummary } from './types.js'
import { type VerdictOptions, verdictFor } from './verdict.js'
import { short } from './wait.js'

export interface Io {
  out: (line: string) => void
  err: (line: string) => void
}

const defaultIo: Io = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}

/** Fails fast, with exit code 2, when the deployment cannot be reached or a token that must work is refused. */
export async function preflight(config: SuiteConfig): Promise<void> {
  // The expired and revoked tokens are not here: refusing them is what auth.expired-token-401 and
  // auth.revoked-token-401 check, reported like any check.
  const tokens = (Object.entries(config.tokens) as Array<[TokenKey, string | undefined]>).filter(
    (entry): entry is [TokenKey, string] => !!entry[1] && entry[0] !== 'expired' && entry[0] !== 'revoked',
  )
  const http = new HttpClient({
    baseUrl: config.baseUrl,
    // One request a token, sent once more when the deployment closed the connection before answering.
    budget: new RequestBudget(2 * tokens.length),
    timeoutMs: config.timeoutMs,
  })
  for (const [key, token] of tokens) {
    let status: number
    try {
      status = (await http.get('/v1/tools?limit=1', { token })).status
    } catch (err) {
      if (err instanceof TransportError) {
        throw new ConfigError(
          `cannot reach ${config.baseUrl}: ${err.exchange.error} (check ${settingName('base-url')})`,
        )
      }
      throw err
    }
    if (status === 401)
      throw new ConfigError(`the ${tokenName(key)} is not accepted by ${config.baseUrl} (401)`)
    if (status === 404 && key === 'primary') {
      throw new ConfigError(
        `${config.baseUrl}/v1/tools answered 404: is ${settingName('base-url')} the service address without /v1?`,
      )
    }
  }
}

/**
 * Asks the deployment to accept the receiver URL (a subscription that is deleted again). A refusal is not a
 * configuration error (the webhook checks fail and say the same), but the advice comes first, once.
 */
export async function receiverPreflight(config: SuiteConfig, io: Io): Promise<RunFindings> {
  const url = config.receiver.url
  if (!url) return {}
  const http = new HttpClient({
    baseUrl: config.baseUrl,
    token: config.tokens.primary,
    budget: new RequestBudget(3),
    timeoutMs: config.timeoutMs,
  })
  let res: HttpResponse
  try {
    res = await http.post('/v1/webhooks', {
      url,
      events: ['run.succeeded'],
      secret: `whsec-conf-preflight-${config.prefix}`,
    })
  } catch (err) {
    io.err(`warning: could not ask the deployment to accept the webhook receiver: ${(err as Error).message}`)
    return {}
  }
  if (res.status === 429 || res.status >= 500) {
    io.err(`warning: could not ask the deployment to accept the webhook receiver (${res.status})`)
    return {}
  }
  if (res.status >= 200 && res.status < 300) {
    const id = obj(res.body).webhook_id ?? obj(res.body).id
    if (typeof id === 'string') await http.delete(`/v1/webhooks/${id}`).catch(() => undefined)
    return {}
  }
  const refusal = `${url} (${res.status} ${short(res.body, 200)})`
  io.err(
    `warning: ${receiverAdvice(url, `the deployment refused it (${res.status} ${short(res.body, 200)})`)}`,
  )
  return { receiverRefused: refusal }
}

interface Reports {
  junit?: string
  json?: string
  markdown?: string
}

function writeReports(reports: Reports, summary: RunSummary, io: Io, verdictOptions: VerdictOptions): void {
  summary.verdict ??= verdictFor(summary, verdictOptions)
  const write = (path: string | undefined, text: string) => {
    if (!path) return
    try {
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(path, text)
      io.out(`wrote ${path}`)
    } catch (err) {
      io.err(`agentops-conformance: cannot write ${path}: ${(err as Error).message}`)
    }
  }
  write(reports.junit, toJunit(summary))
  write(reports.json, toJson(summary))
  write(reports.markdown, toMarkdown(summary))
}

/** The suite's version: the bundle's own, else its package.json's. */
export function suiteVersion(): string {
  if (EMBEDDED_VERSION) return EMBEDDED_VERSION
  try {
    return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string })
      .version
  } catch {
    return 'unknown'
  }
}

/**
 * What a core result does to the verdict when it rules a passing one out (--bail stops there): it failed, or it
 * could not (fully) run and --allow-incomplete does not accept that. undefined: the run goes on.
 */
function ruledOut(r: CheckResult, config: SuiteConfig): string | undefined {
  if (r.outcome === 'fail') return 'failed'
  if (config.allowIncomplete) return undefined
  if (r.outcome === 'skip' && !r.notApplicable) return 'could not run'
  if (r.outcome === 'partial') return 'only partly ran'
  return undefined
}

/**
 * `signal` ends the run early (an interrupt): checks not yet begun are skipped with its reason, the one running is
 * cut short, and the verdict and reports still come. --deadline aborts it the same way when its time is up.
 */
export async function main(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: Io = defaultIo,
  interrupt?: AbortSignal,
): Promise<number> {
  const started = Date.now()
  const abort = new AbortController()
  const onInterrupt = () => abort.abort(interrupt?.reason)
  interrupt?.addEventListener('abort', onInterrupt, { once: true })
  const signal = abort.signal
  let deadlineTimer: NodeJS.Timeout | undefined
  let reference: ReferenceServer | undefined
  let localNats: LocalNats | undefined
  let receiver: WebhookReceiver | undefined
  let reports: Reports = {}
  let config: SuiteConfig | undefined
  const results: CheckResult[] = []
  const teardown = async () => {
    clearTimeout(deadlineTimer)
    interrupt?.removeEventListener('abort', onInterrupt)
    await receiver?.close()
    await reference?.stop()
    await localNats?.stop()
    receiver = undefined
    reference = undefined
    localNats = undefined
  }
  const startedAt = new Date().toISOString()
  let pacer: Pacer | undefined
  // Whatever ends the run, the reports are written: a partial run with the error beats no report in CI.
  const verdictOptions = (): VerdictOptions => ({
    strictProfile: config?.strictProfile ?? false,
    allowIncomplete: config?.allowIncomplete ?? false,
  })
  const bail = (kind: 'configuration error' | 'internal error', message: string): RunSummary => ({
    startedAt,
    finishedAt: new Date().toISOString(),
    baseUrl: config?.baseUrl ?? '',
    seed: config?.seed ?? 0,
    requestsUsed: 0,
    results,
    internalError: `${kind}: ${message}`,
    ...(pacer ? { pacedMs: pacer.waitedMs } : {}),
  })
  try {
    if (argv[0] === 'init') return runInit(argv.slice(1), ALL_CHECKS, io.out)
    const options = resolveConfig(argv, env)
    config = options.config
    reports = config.reports
    const deadline = config.deadlineSeconds
    if (deadline !== undefined) {
      const reason = `the ${settingName('deadline')} of ${deadline} s passed`
      deadlineTimer = setTimeout(
        () => abort.abort(reason),
        Math.max(0, deadline * 1000 - (Date.now() - started)),
      )
    }
    if (options.help) {
      io.out(helpText())
      return 0
    }
    if (options.version) {
      io.out(`agentops-conformance ${suiteVersion()}`)
      return 0
    }
    const cov = coverage(ALL_CHECKS)
    if (options.list) {
      for (const c of selectChecks(ALL_CHECKS, config.only, config.skip)) {
        io.out(`${c.id.padEnd(48)} ${c.level.padEnd(8)} ${c.clauses.join(',').padEnd(16)} ${c.title}`)
      }
      io.out(
        `\n${ALL_CHECKS.length} checks; ${cov.covered} of ${cov.statements} spec statements have checks (traceability.md)`,
      )
      return 0
    }
    const embedded = config.openapiPath === BUNDLED_CONTRACT && EMBEDDED_CONTRACT !== undefined
    if (!embedded && !existsSync(config.openapiPath))
      throw new ConfigError(`OpenAPI document not found: ${config.openapiPath} (${settingName('openapi')})`)
    const openapiPath = config.openapiPath
    const compile = () =>
      embedded ? Contract.fromText(EMBEDDED_CONTRACT ?? '') : Contract.fromFile(openapiPath)
    // With --reference, the contract compiles while the reference's keys are issued (a child process).
    let contract: Contract | undefined
    // The receiver listens first: the reference server is told its exact host:port as its one private target.
    receiver = new WebhookReceiver()
    try {
      await receiver.listen(config.receiver.host, config.receiver.port)
    } catch (err) {
      throw new ConfigError(
        `the webhook receiver cannot listen on ${config.receiver.host}:${config.receiver.port}: ${(err as Error).message} (${settingName('receiver-host')}, ${settingName('receiver-port')})`,
      )
    }
    config.receiver.url ??= `http://${config.receiver.host}:${receiver.port}/hooks`
    if (options.reference) {
      // A NATS server for destinations.event-bus: the declared one, else a local nats-server when one is installed.
      if (!config.natsUrl) {
        const started = await startLocalNats(() => freePort())
        if (started.nats) {
          localNats = started.nats
          config.natsUrl = started.nats.url
        } else io.out(`reference: destinations.event-bus will skip: ${started.reason}`)
      }
      reference = await startReference(
        io.out,
        () => {
          contract = compile()
        },
        {
          receiverTarget: hostAndPort(config.receiver.url),
          ...(config.natsUrl ? { natsTarget: natsTarget(config.natsUrl).hostPort } : {}),
          ...(config.referencePort ? { port: config.referencePort } : {}),
        },
      )
      config.baseUrl = reference.baseUrl
      // The reference serves GraphQL at /v1/graphql: declared, so the spec's rules on it are checked (core).
      config.graphqlUrl ??= `${reference.baseUrl}/v1/graphql`
      config.stream.replayWindow ??= REFERENCE_REPLAY_WINDOW
      config.webhookMaxAttempts ??= REFERENCE_WEBHOOK_MAX_ATTEMPTS
      config.streamUrl = ''
      config.tokens = { ...reference.tokens }
      config.revoke ??= reference.revoke
      config.issueExpiring ??= reference.issueExpiring
      config.runLink ??= reference.runLink
    }
    contract ??= compile()
    if (config.provision && !options.reference)
      config.tokens = withProvisioned(config.tokens, await provision(config.provision))
    requireTarget(config)
    await preflight(config)
    if (options.plan) {
      const checks = selectChecks(ALL_CHECKS, config.only, config.skip)
      // Nothing sent but the preflight's reads: the receiver is not asked to accept the URL either.
      config.receiver.url ??= `http://${config.receiver.host}:${config.receiver.port || '<free port>'}/hooks`
      io.out(
        `agentops-conformance --plan: ${checks.length} checks against ${config.baseUrl} (reachable, tokens accepted)`,
      )
      const entries = planFor(checks, config)
      for (const line of formatPlan(entries, config)) io.out(line)
      const coreMissing = entries.filter((e) => e.level === 'core' && e.outcome === 'skip').length
      return coreMissing > 0 && !config.allowIncomplete ? 3 : 0
    }

    const findings = await receiverPreflight(config, io)

    const selection = selectChecks(ALL_CHECKS, config.only, config.skip)
    if (selection.length === 0) throw new ConfigError('--only/--skip leave no check to run; see --list')
    // --bail: the first core failure is the answer, so the core checks go first.
    const checks = config.bail ? coreFirst(selection, config.first) : selection
    // --bail --strict-profile: a profile failure is the answer too; once one failed the other profile checks are
    // skipped or cut short (the core checks, all begun by then, and the sweep still run, so the failure's level stays
    // known).
    const profileAbort = new AbortController()
    io.out(
      `agentops-conformance: ${checks.length} checks against ${config.baseUrl} (stream ${config.streamUrl})`,
    )
    io.out(
      `prefix ${config.prefix}, seed ${config.seed}, budget ${config.budget} requests, receiver ${config.receiver.url}\n`,
    )
    pacer = new Pacer(config)
    const summary = await runChecks({
      signal,
      config,
      checks,
      contract,
      receiver,
      pacer,
      findings,
      // The reference's store is a temporary file deleted with its server: undoing the run there only costs time.
      cleanup: reference === undefined,
      profileSignal: profileAbort.signal,
      log: io.out,
      onResult: (r, i, n) => {
        results.push(r)
        // --bail: a core result that rules a passing verdict out is the answer; what has not begun is skipped naming
        // it, what runs is cut short.
        const bailOn = config?.bail && r.level === 'core' && !signal.aborted ? ruledOut(r, config) : undefined
        if (bailOn) abort.abort(`--bail: core check ${r.id} ${bailOn}`)
        if (config?.bail && config.strictProfile && r.level === 'profile' && r.outcome === 'fail')
          if (!profileAbort.signal.aborted)
            profileAbort.abort(`--bail --strict-profile: profile check ${r.id} failed`)
        // Core results as they finish; profile results are summarised at the end (or shown with --verbose).
        if (r.level === 'core' || config?.verbose) io.out(formatResult(r, i, n, config?.verbose ?? false))
      },
    })
    summary.traceability = { statements: cov.statements, covered: cov.covered }
    const selected = new Set(checks.map((c) => c.id))
    summary.notSelected = ALL_CHECKS.filter((c) => c.level === 'core' && !selected.has(c.id)).map((c) => c.id)
    summary.verdict = verdictFor(summary, verdictOptions())
    io.out(formatSummary(summary, config.strictProfile))
    writeReports(reports, summary, io, verdictOptions())
    // Everything is closed before the last line: once it is printed the process has nothing left to end.
    await teardown()
    io.out(summary.verdict.line)
    return summary.verdict.exitCode
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`agentops-conformance: configuration error: ${err.message}`)
      writeReports(reports, bail('configuration error', err.message), io, verdictOptions())
      return 2
    }
    const e = err as Error
    io.err(`agentops-conformance: internal error: ${e.message}`)
    if (config?.verbose) io.err(e.stack ?? String(err))
    const summary = bail('internal error', `${e.name}: ${e.message}`)
    writeReports(reports, summary, io, verdictOptions())
    await teardown()
    io.out(summary.verdict?.line ?? 'ERROR')
    return 1
  } finally {
    await teardown()
  }
}

/** Whether this module is the program node was started with (also through a symlink, and inside the bundle). */
function isEntryPoint(): boolean {
  const script = process.argv[1]
  if (!script) return false
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href
  } catch {
    return false
  }
}

/** How long the process may take to end by itself after its verdict before it is ended. */
const EXIT_GRACE_MS = 1000

/**
 * Runs the CLI as a program: the exit code is set, and the process then ends by itself (the checks close every
 * socket, receiver and timer of theirs). Should anything still hold it open a second later (a check that outlived
 * its time limit and sleeps), it says what and exits anyway: a CI job never waits on it.
 */
export async function runProgram(argv: string[]): Promise<void> {
  // Ctrl-C or a CI runner's SIGTERM: the run ends early with its verdict and reports; a second one ends it now.
  const interrupt = new AbortController()
  const stop = (signal: NodeJS.Signals) => {
    if (interrupt.signal.aborted) process.exit(130)
    interrupt.abort(`interrupted (${signal})`)
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
  const code = await main(argv, process.env, defaultIo, interrupt.signal)
  process.off('SIGINT', stop)
  process.off('SIGTERM', stop)
  process.exitCode = code
  setTimeout(() => {
    const open = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap' && r !== 'Timeout')
    process.stderr.write(
      `agentops-conformance: still running ${EXIT_GRACE_MS} ms after the verdict (${open.join(', ') || 'timers'} open); exiting\n`,
    )
    process.exit(code)
  }, EXIT_GRACE_MS).unref()
}

if (isEntryPoint()) await runProgram(process.argv.slice(2))
