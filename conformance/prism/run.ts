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
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from '../src/config.js'
import { freePort, startReference } from '../src/reference.js'

interface Result {
  id: string
  level: 'core' | 'profile'
  outcome: 'pass' | 'fail' | 'skip'
  message?: string
}

const PRISM = join(REPO_ROOT, 'node_modules', '.bin', 'prism')
const SUITE = join(REPO_ROOT, 'bin', 'agentops-conformance.mjs')
const CONTRACT = join(REPO_ROOT, 'openapi', 'agent-operations.yaml')

/** Against the mock these must pass (shapes the contract's examples satisfy) … */
const MOCK_MUST_PASS = [
  'auth.missing-token-401',
  'sweep.error-envelope-everywhere',
  'sweep.rfc3339-timestamps',
]
/** … and these must fail (they need state a mock does not keep). */
const MOCK_MUST_FAIL = [
  'idempotency.different-body-409',
  'scoping.identical-404',
  'ratelimit.429-at-limit',
  'pagination.walk-every-item-once',
]

async function startPrism(args: string[]): Promise<{ url: string; child: ChildProcess; stop: () => void }> {
  const port = await freePort()
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
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prism exited: ${output}`)
    try {
      await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })
      break
    } catch {
      if (Date.now() > deadline) throw new Error(`prism did not start: ${output}`)
      await new Promise((r) => setTimeout(r, 200))
    }
  }
  return { url, child, stop: () => child.kill('SIGTERM') }
}

async function runSuite(args: string[]): Promise<{ code: number; results: Result[] }> {
  const report = join(mkdtempSync(join(tmpdir(), 'agentops-prism-')), 'report.json')
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
  }
  return { code, results }
}

const problems: string[] = []
const log = (line: string) => console.log(`prism: ${line}`)

// 1. Validation proxy in front of the reference server.
const ref = await startReference(log)
try {
  const proxy = await startPrism(['proxy', CONTRACT, ref.baseUrl, '--errors', '--validate-request=false'])
  try {
    const t = ref.tokens
    const tokenArgs = [
      ['--token', t.primary],
      ['--second-token', t.secondWorkspace],
      ['--narrow-token', t.narrowScope],
      ['--limited-token', t.rateLimited],
      ['--limited-peer-token', t.rateLimitedPeer],
      ['--expired-token', t.expired],
    ].flatMap(([flag, value]) => (value ? [flag as string, value] : []))
    log(`proxy ${proxy.url} -> ${ref.baseUrl}`)
    const { code, results } = await runSuite([
      '--base-url',
      proxy.url,
      '--stream-url',
      ref.baseUrl.replace(/^http/, 'ws'),
      ...tokenArgs,
    ])
    const coreFailures = results.filter((r) => r.level === 'core' && r.outcome === 'fail')
    if (code !== 0 || results.length === 0) {
      problems.push(
        `through the validation proxy the suite exited ${code}; core failures: ${coreFailures.map((r) => `${r.id} (${r.message ?? ''})`).join('; ') || 'none reported'}`,
      )
    } else
      log(`proxy: ${results.filter((r) => r.outcome === 'pass').length} checks passed, no contract violation`)
  } finally {
    proxy.stop()
  }
} finally {
  await ref.stop()
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
  ])
  const outcome = new Map(results.map((r) => [r.id, r.outcome]))
  if (code !== 1)
    problems.push(`against the mock the suite exited ${code}, expected 1 (stateful checks fail)`)
  for (const id of MOCK_MUST_PASS) {
    if (outcome.get(id) !== 'pass')
      problems.push(`mock: ${id} should pass (shape only), got ${outcome.get(id)}`)
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
