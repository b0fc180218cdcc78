/** `agentops-conformance`: resolves settings, checks they work, runs the checks, writes the reports, exits 0/1/2. */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { ALL_CHECKS } from './checks/index.js'
import { helpText, requireTarget, resolveConfig, type SuiteConfig } from './config.js'
import { Contract } from './contract.js'
import { HttpClient, RequestBudget, TransportError } from './http.js'
import { WebhookReceiver } from './receiver.js'
import { type ReferenceServer, startReference } from './reference.js'
import { toJson } from './report/json.js'
import { toJunit } from './report/junit.js'
import { toMarkdown } from './report/markdown.js'
import { formatResult, formatSummary } from './report/text.js'
import { runChecks, selectChecks } from './runner.js'
import { coverage, loadTraceability } from './traceability.js'
import { ConfigError, exitCodeFor } from './types.js'
import { sleep } from './wait.js'

export interface Io {
  out: (line: string) => void
  err: (line: string) => void
}

const defaultIo: Io = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}

const TOKEN_NAMES: Record<keyof SuiteConfig['tokens'], string> = {
  primary: 'primary token (--token)',
  secondWorkspace: 'second-workspace token (--second-token)',
  narrowScope: 'narrow-scope token (--narrow-token)',
  rateLimited: 'rate-limited token (--limited-token)',
  rateLimitedPeer: 'rate-limited peer token (--limited-peer-token)',
  expired: 'expired token (--expired-token)',
}

/** Fails fast, with exit code 2, when the deployment cannot be reached or a token is not accepted. */
export async function preflight(config: SuiteConfig, io: Io): Promise<void> {
  const http = new HttpClient({
    baseUrl: config.baseUrl,
    budget: new RequestBudget(20),
    timeoutMs: config.timeoutMs,
  })
  for (const [key, token] of Object.entries(config.tokens) as Array<
    [keyof SuiteConfig['tokens'], string | undefined]
  >) {
    if (!token || key === 'expired') continue
    let status: number
    try {
      status = (await http.get('/v1/agents?limit=1', { token })).status
    } catch (err) {
      if (err instanceof TransportError) {
        throw new ConfigError(`cannot reach ${config.baseUrl}: ${err.exchange.error} (check --base-url)`)
      }
      throw err
    }
    if (status === 401)
      throw new ConfigError(`the ${TOKEN_NAMES[key]} is not accepted by ${config.baseUrl} (401)`)
    if (status === 404 && key === 'primary') {
      throw new ConfigError(
        `${config.baseUrl}/v1/agents answered 404: is --base-url the service address without /v1?`,
      )
    }
  }
  if (config.tokens.expired) {
    // A token made to expire in a second may still be valid when the run starts; give it a moment.
    for (let i = 0; i < 30; i++) {
      const res = await http.get('/v1/agents?limit=1', { token: config.tokens.expired })
      if (res.status === 401) return
      await sleep(200)
    }
    io.err('warning: the expired token is still accepted; auth.expired-token-401 will fail')
  }
}

export async function main(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: Io = defaultIo,
): Promise<number> {
  let reference: ReferenceServer | undefined
  let receiver: WebhookReceiver | undefined
  try {
    const options = resolveConfig(argv, env)
    const { config } = options
    if (options.help) {
      io.out(helpText())
      return 0
    }
    const statements = loadTraceability()
    const cov = coverage(statements, new Set(ALL_CHECKS.map((c) => c.id)))
    if (options.list) {
      for (const c of selectChecks(ALL_CHECKS, config.only, config.skip)) {
        io.out(`${c.id.padEnd(48)} ${c.level.padEnd(8)} ${c.sections.join(',').padEnd(10)} ${c.title}`)
      }
      io.out(
        `\n${ALL_CHECKS.length} checks; ${cov.covered} of ${cov.statements} spec statements covered (conformance/traceability.md)`,
      )
      return 0
    }
    if (!existsSync(config.openapiPath))
      throw new ConfigError(`OpenAPI document not found: ${config.openapiPath} (--openapi)`)
    const contract = Contract.fromFile(config.openapiPath)

    if (options.reference) {
      reference = await startReference(io.out)
      config.baseUrl = reference.baseUrl
      config.streamUrl = ''
      config.tokens = { ...reference.tokens }
    }
    requireTarget(config)
    await preflight(config, io)

    receiver = new WebhookReceiver()
    try {
      await receiver.listen(config.receiver.host, config.receiver.port)
    } catch (err) {
      throw new ConfigError(
        `the webhook receiver cannot listen on ${config.receiver.host}:${config.receiver.port}: ${(err as Error).message}`,
      )
    }
    config.receiver.url ??= `http://${config.receiver.host}:${receiver.port}/hooks`

    const checks = selectChecks(ALL_CHECKS, config.only, config.skip)
    if (checks.length === 0) throw new ConfigError('--only/--skip leave no check to run; see --list')
    io.out(
      `agentops-conformance: ${checks.length} checks against ${config.baseUrl} (stream ${config.streamUrl})`,
    )
    io.out(
      `prefix ${config.prefix}, seed ${config.seed}, budget ${config.budget} requests, receiver ${config.receiver.url}\n`,
    )
    const summary = await runChecks({
      config,
      checks,
      contract,
      receiver,
      log: io.out,
      onResult: (r, i, n) => io.out(formatResult(r, i, n)),
    })
    summary.traceability = { statements: cov.statements, covered: cov.covered }
    io.out(formatSummary(summary, config.strictProfile))
    const write = (path: string | undefined, text: string) => {
      if (!path) return
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(path, text)
      io.out(`wrote ${path}`)
    }
    write(config.reports.junit, toJunit(summary))
    write(config.reports.json, toJson(summary))
    write(config.reports.markdown, toMarkdown(summary))
    return exitCodeFor(summary.results, config.strictProfile)
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`agentops-conformance: configuration error: ${err.message}`)
      return 2
    }
    io.err(`agentops-conformance: ${(err as Error).stack ?? String(err)}`)
    return 1
  } finally {
    await receiver?.close()
    await reference?.stop()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main(process.argv.slice(2))
}
