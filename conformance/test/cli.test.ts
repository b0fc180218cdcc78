import { readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listenOnTestPort } from '../../test/support/ports.js'
import { main } from '../src/cli.js'
import { resolveConfig, SETTINGS } from '../src/config.js'
import { ConfigError } from '../src/types.js'
import { scratchDir } from './scratch.js'

let server: Server
let baseUrl: string

beforeAll(async () => {
  // A deployment that knows one token: "good".
  server = createServer((req, res) => {
    // "old" plays an expired token the deployment still accepts; receiver URLs on loopback are refused.
    if (req.method === 'POST' && req.url === '/v1/webhooks') {
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"error":{"code":"invalid_request","message":"private address","detail":{},"request_id":"r"}}')
      return
    }
    const ok = req.headers.authorization === 'Bearer good' || req.headers.authorization === 'Bearer old'
    res
      .writeHead(ok ? 200 : 401, { 'content-type': 'application/json' })
      .end(
        ok
          ? '{"data":[],"next_cursor":null}'
          : '{"error":{"code":"unauthenticated","message":"no","detail":{},"request_id":"r"}}',
      )
  })
  await listenOnTestPort(server)
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const out: string[] = []
  const err: string[] = []
  const code = await main(argv, env, { out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

describe('configuration errors exit 2 with a message that says which setting', () => {
  it('no base URL', async () => {
    const r = await run([])
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/--base-url/)
  })

  it('an unreachable base URL', async () => {
    const r = await run(['--base-url', 'http://127.0.0.1:1', '--token', 'good'])
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/cannot reach http:\/\/127\.0\.0\.1:1/)
  })

  it('a primary token the deployment refuses', async () => {
    const r = await run(['--base-url', baseUrl, '--token', 'bad'])
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/primary token \(--token \/ AGENTOPS_CONFORMANCE_TOKEN\) is not accepted/)
  })

  it('a refused secondary token names that token', async () => {
    const r = await run(['--base-url', baseUrl, '--token', 'good', '--second-token', 'bad'])
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/second-workspace token/)
  })

  it('an unknown flag, a bad number, a missing or broken config file', async () => {
    expect((await run(['--nope'])).code).toBe(2)
    expect((await run(['--budget', 'lots'])).err).toMatch(/budget/)
    expect((await run(['--config', '/nonexistent/conf.json'])).err).toMatch(/cannot read config file/)
    const broken = join(scratchDir('conf-broken-'), 'broken.json')
    writeFileSync(broken, '{ not json')
    expect((await run(['--config', broken])).err).toMatch(/not valid JSON/)
  })

  it('--only that selects nothing', async () => {
    const r = await run(['--base-url', baseUrl, '--token', 'good', '--only', 'nothing.here'])
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/leave no check to run/)
  })
})

describe('a run always ends with its reports', () => {
  it('an expired token the deployment accepts is a failed check in the reports, not a preflight abort', async () => {
    const dir = scratchDir('conf-reports-')
    const r = await run([
      '--base-url',
      baseUrl,
      '--token',
      'good',
      '--expired-token',
      'old',
      '--only',
      'auth.expired-token-401',
      '--json',
      join(dir, 'r.json'),
      '--junit',
      join(dir, 'r.xml'),
    ])
    expect(r.code).toBe(1)
    expect(r.out).toMatch(/FAIL core\s+auth\.expired-token-401/)
    const report = JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8'))
    expect(report.results[0]).toMatchObject({ id: 'auth.expired-token-401', outcome: 'fail' })
    expect(readFileSync(join(dir, 'r.xml'), 'utf8')).toContain('<failure')
    // The receiver preflight said what to set when the deployment refused the receiver URL.
    expect(r.err).toMatch(/--receiver-url/)
    expect(r.err).toMatch(/AGENTOPS_WEBHOOK_PRIVATE_TARGETS=127.0.0.1:\d+/)
  })

  it('an internal error still writes every report, with the error in it', async () => {
    const dir = scratchDir('conf-reports-')
    const broken = join(dir, 'broken.yaml')
    writeFileSync(broken, 'openapi: [unclosed')
    const r = await run([
      '--base-url',
      baseUrl,
      '--token',
      'good',
      '--openapi',
      broken,
      '--json',
      join(dir, 'r.json'),
      '--junit',
      join(dir, 'r.xml'),
      '--markdown',
      join(dir, 'r.md'),
    ])
    expect(r.code).toBe(1)
    expect(r.err).toMatch(/internal error/)
    expect(JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')).internalError).toMatch(/internal error/)
    expect(readFileSync(join(dir, 'r.xml'), 'utf8')).toMatch(/errors="1"[\s\S]*<error /)
    expect(readFileSync(join(dir, 'r.md'), 'utf8')).toContain('The run ended early')
  })
})

describe('every run ends with its verdict line and exit code', () => {
  it('a skipped core check makes the run INCOMPLETE (3), naming the setting; --allow-incomplete makes it 0', async () => {
    const argv = ['--base-url', baseUrl, '--token', 'good', '--only', 'auth.expired-token-401']
    const r = await run(argv)
    expect(r.code).toBe(3)
    const last = r.out.trim().split('\n').at(-1)
    expect(last).toMatch(
      /^INCOMPLETE: no core check failed, but \d+ of \d+ core checks did not run: 1 skipped \(they need --expired-token\); \d+ left out by --only\/--skip/,
    )
    const allowed = await run([...argv, '--allow-incomplete'])
    expect(allowed.code).toBe(0)
    expect(allowed.out.trim().split('\n').at(-1)).toMatch(/^INCOMPLETE: .*accepted with --allow-incomplete/)
  })

  it('a failed core check: NOT CONFORMANT, exit 1, the last line names it', async () => {
    const r = await run([
      '--base-url',
      baseUrl,
      '--token',
      'good',
      '--expired-token',
      'old',
      '--only',
      'auth.expired-token-401',
    ])
    expect(r.code).toBe(1)
    expect(r.out.trim().split('\n').at(-1)).toMatch(
      /^NOT CONFORMANT: 1 of \d+ core checks failed: auth\.expired-token-401$/,
    )
  })
})

describe('settings', () => {
  it('--help documents every flag and its environment variable', async () => {
    const r = await run(['--help'])
    expect(r.code).toBe(0)
    for (const s of SETTINGS) {
      expect(r.out).toContain(`--${s.flag}`)
      expect(r.out).toContain(`AGENTOPS_CONFORMANCE_${s.env}`)
    }
  })

  it('--list prints every check with its level and spec section', async () => {
    const r = await run(['--list'])
    expect(r.code).toBe(0)
    expect(r.out).toMatch(/auth\.missing-token-401\s+core\s+S4\.1,S5\.2/)
    expect(r.out).toMatch(/ratelimit\.header-format\s+profile/)
  })

  it('--only and --skip select by id prefix', async () => {
    const r = await run(['--list', '--only', 'auth.,stream.', '--skip', 'auth.missing,stream.records'])
    const ids = r.out
      .split('\n')
      .map((l) => l.split(' ')[0])
      .filter((id) => /^[a-z]+\./.test(id ?? ''))
    expect(ids.length).toBeGreaterThan(3)
    expect(ids.every((id) => /^(auth|stream)\./.test(id!))).toBe(true)
    expect(ids).not.toContain('auth.missing-token-401')
    expect(ids).not.toContain('stream.records-with-lineage')
    expect(ids).toContain('auth.expired-token-401')
  })

  it('flags win over the environment, which wins over the config file', () => {
    const file = join(scratchDir('conf-ok-'), 'ok.json')
    writeFileSync(
      file,
      JSON.stringify({
        baseUrl: 'http://file.example',
        budget: 300,
        tokens: { primary: 'from-file', expired: 'old' },
        profile: { policyClass: 'internal' },
      }),
    )
    const env = { AGENTOPS_CONFORMANCE_BUDGET: '400', AGENTOPS_CONFORMANCE_TOKEN: 'from-env' }
    const { config } = resolveConfig(['--config', file, '--budget', '500'], env)
    expect(config.budget).toBe(500)
    expect(config.tokens.primary).toBe('from-env')
    expect(config.tokens.expired).toBe('old')
    expect(config.baseUrl).toBe('http://file.example')
    expect(config.profile.policyClass).toBe('internal')
    expect(config.profile.tools.succeed.provider).toBe('builtin:echo')
    expect(resolveConfig(['--config', file], env).config.budget).toBe(400)
    expect(config.prefix).toMatch(/^conf-[0-9a-f]{8}-$/)
  })

  it('refuses a budget too small to run anything', () => {
    expect(() => resolveConfig(['--budget', '10'])).toThrow(ConfigError)
  })
})

describe('agentops-conformance init', () => {
  it('writes a commented config that --config reads: every token, what it is for, which checks need it', async () => {
    const file = join(scratchDir('conf-init-'), 'conformance.json')
    const r = await run(['init', '--base-url', baseUrl, '--provision', 'echo provisioned', '--output', file])
    expect(r.code).toBe(0)
    const text = readFileSync(file, 'utf8')
    for (const key of [
      'primary',
      'secondWorkspace',
      'narrowScope',
      'otherScope',
      'runsOnly',
      'rateLimited',
      'rateLimitedPeer',
      'expired',
    ])
      expect(text).toMatch(new RegExp(`// .*\\n\\s+// Needed by [^\\n]+\\n\\s+"${key}": ""`))
    expect(text).toMatch(/Needed by \d+ checks: [^\n]*scoping\.agent-404/)
    const { config } = resolveConfig(['--config', file])
    expect(config.baseUrl).toBe(baseUrl)
    expect(config.provision).toBe('echo provisioned')
    expect(config.tokens).toEqual({ primary: '' })
    // An existing file is kept unless --force.
    expect((await run(['init', '--output', file])).code).toBe(2)
    expect((await run(['init', '--output', file, '--force'])).code).toBe(0)
  })
})

describe('--version', () => {
  it('prints the suite version', async () => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
      version: string
    }
    expect((await run(['--version'])).out).toBe(`agentops-conformance ${version}`)
  })
})
