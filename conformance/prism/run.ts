/**
 * The suite through Prism, two ways (CI runs both, `npm run conformance:prism`):
 *
 * 1. `prism proxy --errors` in front of the reference server: every answer is checked against the contract on its
 *    way back, and a violation becomes a 5xx the suite's checks catch. Expected: every core check passes.
 * 2. `prism mock` of the contract: a server with the right shapes and no state. Expected: the shape checks pass and
 *    the stateful checks (idempotency, scoping, limits, runs, ingest, webhooks) fail. This proves the suite tells a
 *    contract-shaped facade from a working service (see the README for the reasons per family).
 *
 * Talks to everything over the wire; starts processes, imports nothing from src/.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { listenOnTestPort, testPort } from '../../test/support/ports.js'
import { REPO_ROOT } from '../src/config.js'
import { startLocalNats } from '../src/nats.js'
import { REFERENCE_WEBHOOK_MAX_ATTEMPTS, startReference } from '../src/reference.js'

interface Result {
  id: string
  level: 'core' | 'profile'
  outcome: 'pass' | 'fail' | 'skip'
  message?: string
}

const PRISM = join(REPO_ROOT, 'node_modules', '.bin', 'prism')
const SUITE = join(REPO_ROOT, 'bin', 'agentops-conformance.mjs')
const CONTRACT = join(REPO_ROOT, 'openapi', 'agent-operations.yaml')

/**
 * Checks whose requests Prism answers itself when errors are on, so the reference server never sees them:
 * Prism's security validation answers a missing or empty bearer token with its own RFC 7807 401, and its HTTP
 * layer (micri) parses JSON bodies and answers malformed JSON with its own 400. Their answers are Prism's, not
 * the server's, so the proxy run leaves these checks out (the plain `--reference` run covers them).
 */
const PROXY_INTERCEPTED = [
  'auth.missing-token-401',
  'auth.malformed-token-401',
  'auth.www-authenticate',
  'auth.refusal-reason',
  // Prism reads the scheme as written: `bearer <token>` gets its own 401 before the server sees it.
  'auth.bearer-forms',
  'validation.malformed-json-400',
  'validation.invalid-request-detail',
  // It parses a JSON body and forwards it written anew: an integer no double holds reaches the server rounded (and
  // a REST batch holding one is then taken, while the same batch over the stream, which goes to the server, is not).
  'validation.numbers-kept-or-refused',
  'stream.socket-ingest-judged-like-rest',
  // Its 4401 close reasons are judged against REST's 401 message for the same credentials, and REST's 401 here is
  // Prism's own (no envelope): the socket goes to the server directly, the REST probe through Prism.
  'graphql.ws-authentication',
  // Probes without a token, with non-JSON or oversized bodies and off the documented routes: Prism answers most of
  // them itself (its own 401, 404 and 400 bodies), so they say nothing about the server behind it.
  'surface.',
]

/**
 * Checks that read an answer as it arrives: Prism's proxy hands an answer on only once it has ended, so a live run's
 * event stream reaches the suite whole when the run ends, and how soon each frame came cannot be judged through it
 * (the plain `--reference` run and the mutation run judge it).
 */
const PROXY_BUFFERED = ['runs.trace-pushed-promptly']

/**
 * Checks whose probes the mock answers itself, with its own RFC 7807 bodies (a request without a token, malformed
 * JSON, a plain GET of the stream, which the suite sends to the mock too), which the sweep would then judge instead of the contract's shapes; `auth.missing-token-401` stays, as its
 * status is all it asks of the mock.
 */
const MOCK_INTERCEPTED = [
  'auth.refusal-reason',
  'validation.invalid-request-detail',
  'stream.plain-get-refused',
]

/** Against the mock these must pass: they need only the contract's shapes … */
const MOCK_MUST_PASS = [
  'auth.missing-token-401',
  'auth.valid-token-accepted',
  'sweep.json-content-type',
  'sweep.no-5xx',
  'validation.spec-violations-400',
  'validation.fuzz-never-5xx',
  'webhooks.subscribe',
]
/** … and these must fail: they need state, tenancy, counting or real work that a mock does not have. */
const MOCK_MUST_FAIL = [
  'idempotency.different-body-409',
  'idempotency.run-start-replay',
  'ingest.idempotent-replay',
  'scoping.agent-404',
  'scoping.lists-stay-in-workspace',
  'ratelimit.429-at-limit',
  'pagination.walk-every-item-once',
  'resources.agent-lifecycle',
  'tools.register-inspect-list',
  'runs.start-201-fields',
  'runs.pause-suspends',
  'ingest.batch-202-counts',
  'stream.accepts-token',
]

interface StartedPrism {
  url: string
  child: ChildProcess
  stop: () => void
  /** Why Prism is no longer serving (its exit and its last output), or undefined while it runs. */
  ended: () => string | undefined
}

/**
 * Starts Prism on a free port and waits until Prism itself answers there: its own RFC 7807 404 for a path outside the
 * contract. Another server answering on the port (Prism then fails to bind it and exits) is never taken for it; a
 * start that fails so is tried again on another port, twice at most.
 */
async function startPrism(args: string[]): Promise<StartedPrism> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startPrismOnce(args)
    } catch (err) {
      if (attempt >= 3) throw err
      log(
        `prism ${args[0]} did not start (attempt ${attempt}), trying another port: ${String(err).slice(0, 300)}`,
      )
    }
  }
}

async function startPrismOnce(args: string[]): Promise<StartedPrism> {
  const port = await testPort()
  const child = spawn(PRISM, [...args, '--port', String(port), '--host', '127.0.0.1', '-v', 'warn'], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (d) => {
    output = (output + d).slice(-10_000)
  })
  child.stderr?.on('data', (d) => {
    output = (output + d).slice(-10_000)
  })
  const url = `http://127.0.0.1:${port}`
  const stop = () => child.kill('SIGTERM')
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prism exited: ${output}`)
    try {
      const res = await fetch(`${url}/conf-prism-probe`, { signal: AbortSignal.timeout(1000) })
      if ((await res.text()).includes('stoplight.io/prism/errors')) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      stop()
      throw new Error(`prism did not start: ${output}`)
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  return {
    url,
    child,
    stop,
    ended: () =>
      child.exitCode === null && child.signalCode === null
        ? undefined
        : `prism ${args[0]} ended (exit ${child.exitCode ?? child.signalCode}) during the run; its last output: ${output.slice(-2000)}`,
  }
}

async function runSuite(args: string[]): Promise<{ code: number; results: Result[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'agentops-prism-'))
  const report = join(dir, 'report.json')
  const child = spawn(process.execPath, [SUITE, ...args, '--json', report], {
    cwd: REPO_ROOT,
    stdio: ['ignore', process.env.PRISM_VERBOSE ? 'inherit' : 'ignore', 'inherit'],
  })
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)))
  let results: Result[] = []
  try {
    results = (JSON.parse(readFileSync(report, 'utf8')) as { results: Result[] }).results
  } catch {
    // no report: the code says why
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return { code, results }
}

const problems: string[] = []
const log = (line: string) => console.log(`prism: ${line}`)

/**
 * Proves the proxy really validates answers: in front of a server whose answers break the contract, Prism with
 * errors on must turn them into errors. Without this, a silently lax proxy would make run 1 prove nothing.
 */
async function canary(): Promise<void> {
  const broken = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: 'not a page' }))
  })
  const upstream = `http://127.0.0.1:${await listenOnTestPort(broken)}`
  const proxy = await startPrism(['proxy', CONTRACT, upstream, '--errors', '--validate-request=false'])
  try {
    const res = await fetch(`${proxy.url}/v1/tools?limit=1`, { headers: { authorization: 'Bearer canary' } })
    const body = await res.text()
    if (res.status < 500)
      problems.push(`canary: a contract-breaking answer passed the proxy as ${res.status} ${body}`)
    else log(`canary: a contract-breaking answer became ${res.status} (${body.slice(0, 80)}…)`)
  } finally {
    proxy.stop()
    broken.closeAllConnections()
    broken.close()
  }
}

await canary()

// 1. Validation proxy in front of the reference server.
// The suite's webhook receiver listens on a port chosen now: the reference's one private target. Ports are the test
// harness's (test/support/ports.ts: free ones, or AGENTOPS_TEST_PORT_BASE's range).
const receiverPort = await testPort()
// destinations.event-bus publishes to a local nats-server, as --reference and conformance:mutants give it; without
// one installed the check is left out here (it would skip, and this run wants every check it runs to pass).
const started = await startLocalNats(testPort)
const nats = started.nats ?? undefined
if (!nats) log(`prism: destinations.event-bus left out: ${started.nats === null ? started.reason : ''}`)
const ref = await startReference(log, undefined, {
  port: await testPort(),
  receiverTarget: `127.0.0.1:${receiverPort}`,
  ...(nats ? { natsTarget: nats.hostPort } : {}),
})
try {
  const proxy = await startPrism(['proxy', CONTRACT, ref.baseUrl, '--errors', '--validate-request=false'])
  const declaredDir = mkdtempSync(join(tmpdir(), 'agentops-prism-config-'))
  try {
    const t = ref.tokens
    const tokenArgs = [
      ['--token', t.primary],
      ['--second-token', t.secondWorkspace],
      ['--narrow-token', t.narrowScope],
      ['--other-scope-token', t.otherScope],
      ['--runs-only-token', t.runsOnly],
      ['--limited-token', t.rateLimited],
      ['--limited-peer-token', t.rateLimitedPeer],
      ['--expired-token', t.expired],
      ['--revoked-token', t.revoked],
      ['--revocable-token', t.revocable],
      ['--quota-limited-token', t.quotaLimited],
      ['--standard-tier-token', t.standardTier],
      ['--pro-tier-token', t.proTier],
      // The stream and graphql-ws connections it revokes go to the server directly (see below), as its revoke does.
      ['--revoke', ref.revoke],
      ['--issue-expiring', ref.issueExpiring],
    ].flatMap(([flag, value]) => (value ? [flag as string, value] : []))
    log(`proxy ${proxy.url} -> ${ref.baseUrl}`)
    // What --reference declares of the server it starts: the attempts a delivery gets, where its messages link a run.
    const declared = join(declaredDir, 'conformance.json')
    writeFileSync(
      declared,
      JSON.stringify({
        webhooks: { maxAttempts: REFERENCE_WEBHOOK_MAX_ATTEMPTS },
        destinations: { runLink: ref.runLink },
      }),
    )
    // Prism does not relay WebSockets (nor serve GraphQL, which the contract leaves out): the stream checks talk to
    // the server directly, and every GraphQL check sends to the declared --graphql-url, the server's own.
    const { code, results } = await runSuite([
      '--base-url',
      proxy.url,
      '--stream-url',
      ref.baseUrl.replace(/^http/, 'ws'),
      '--graphql-url',
      `${ref.baseUrl}/v1/graphql`,
      '--skip',
      [...PROXY_INTERCEPTED, ...PROXY_BUFFERED, ...(nats ? [] : ['destinations.event-bus'])].join(','),
      ...(nats ? ['--nats-url', nats.url] : []),
      '--config',
      declared,
      '--strict-profile',
      // The checks left out above make the verdict INCOMPLETE; every other check must pass (exit 0).
      '--allow-incomplete',
      '--receiver-port',
      String(receiverPort),
      ...tokenArgs,
    ])
    const failures = results.filter((r) => r.outcome !== 'pass')
    const proxyEnded = proxy.ended()
    if (proxyEnded) problems.push(proxyEnded)
    if (code !== 0 || results.length === 0 || failures.length > 0) {
      problems.push(
        `through the validation proxy the suite exited ${code}; not passed: ${failures.map((r) => `${r.id} (${r.message ?? r.outcome})`).join('; ') || 'none reported'}`,
      )
    } else
      log(
        `proxy: all ${results.length} checks passed (core and profile), no contract violation reported by Prism`,
      )
  } finally {
    proxy.stop()
    rmSync(declaredDir, { recursive: true, force: true })
  }
} finally {
  await ref.stop()
  await nats?.stop()
}

// 2. The mock: right shapes, no state.
const mock = await startPrism(['mock', CONTRACT])
try {
  const fake = (n: number) => `aok_${String(n).padStart(26, '0')}_${'x'.repeat(43)}`
  const { code, results } = await runSuite([
    '--base-url',
    mock.url,
    '--token',
    fake(1),
    '--second-token',
    fake(2),
    '--narrow-token',
    fake(3),
    '--limited-token',
    fake(4),
    '--wait-ms',
    '3000',
    // The probes off the happy path would judge Prism's own answers (see PROXY_INTERCEPTED), not the contract's shapes.
    '--skip',
    ['surface.', ...MOCK_INTERCEPTED].join(','),
  ])
  const mockEnded = mock.ended()
  if (mockEnded) problems.push(mockEnded)
  const outcome = new Map(results.map((r) => [r.id, r.outcome]))
  const message = new Map(results.map((r) => [r.id, r.message]))
  if (code !== 1)
    problems.push(`against the mock the suite exited ${code}, expected 1 (stateful checks fail)`)
  for (const id of MOCK_MUST_PASS) {
    if (outcome.get(id) !== 'pass')
      problems.push(
        `mock: ${id} should pass (shape only), got ${outcome.get(id)} (${message.get(id) ?? 'no message'})`,
      )
  }
  for (const id of MOCK_MUST_FAIL) {
    if (outcome.get(id) !== 'fail')
      problems.push(`mock: ${id} should fail (needs state), got ${outcome.get(id)}`)
  }
  const failed = results.filter((r) => r.outcome === 'fail').length
  log(
    `mock: ${results.filter((r) => r.outcome === 'pass').length} passed, ${failed} failed (expected pattern checked)`,
  )
} finally {
  mock.stop()
}

if (problems.length > 0) {
  for (const p of problems) console.error(`prism: FAIL ${p}`)
  process.exit(1)
}
log('both Prism runs show the expected pattern')
