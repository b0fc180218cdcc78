import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { listenOnTestPort } from '../../test/support/ports.js'
import type { CheckContext } from '../src/check.js'
import { PACKAGE_ROOT, resolveConfig } from '../src/config.js'
import { Fixtures } from '../src/fixtures.js'
import { HttpClient, RequestBudget } from '../src/http.js'
import { ConfigError } from '../src/types.js'
import { scratchDir } from './scratch.js'

/** What the fake deployment was sent: method, path and parsed body of each request. */
const sent: Array<{ method: string; path: string; body: unknown }> = []
let server: Server
let baseUrl: string

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = ''
    req.on('data', (c: Buffer) => {
      raw += c.toString('utf8')
    })
    req.on('end', () => {
      sent.push({ method: req.method ?? '', path: req.url ?? '', body: raw ? JSON.parse(raw) : undefined })
      const answer = /\/runs$/.test(req.url ?? '') ? { run_id: 'run_1' } : { agent_id: 'agt_1' }
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(answer))
    })
  })
  await listenOnTestPort(server)
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

beforeEach(() => {
  sent.length = 0
})

const dir = scratchDir('conf-toolrun-')
const configFile = (content: unknown) => {
  const file = join(dir, `${Math.random()}.json`)
  writeFileSync(file, JSON.stringify(content))
  return file
}

function fixtures(args: string[]): Fixtures {
  const config = resolveConfig(args, {}).config
  const http = new HttpClient({ baseUrl, token: 't', budget: new RequestBudget(100), timeoutMs: 5000 })
  const ctx = {
    config,
    http,
    name: (label: string) => `conf-test-${label}`,
    cleanup: () => undefined,
  } as Partial<CheckContext> as CheckContext
  return new Fixtures(() => ctx)
}

const tools = [
  { id: 'tool_a', name: 'conf-a' },
  { id: 'tool_b', name: 'conf-b' },
]
const specExample = {
  inputs: { period: '2026-Q3', scope: ['conformance'] },
  mode: 'live',
  trace_level: 'detailed',
}

describe('the declared way to make a run that calls a tool (toolRun)', () => {
  it('by default sends an agent whose capabilities name the tools and the spec’s example start body', async () => {
    const fx = fixtures([])
    const agent = await fx.newToolAgent(tools, 'supervised')
    await fx.startRun(agent)
    expect(sent).toEqual([
      {
        method: 'POST',
        path: '/v1/agents',
        body: { name: 'conf-test-agent', behavior: 'supervised', capabilities: ['conf-a', 'conf-b'] },
      },
      { method: 'POST', path: '/v1/agents/agt_1/runs', body: specExample },
    ])
  })

  it('sends the foreign example’s declared bodies, with the tools filled in and a check’s spec field on top', async () => {
    const fx = fixtures(['--config', join(PACKAGE_ROOT, 'examples', 'config.foreign.json')])
    const agent = await fx.newToolAgent([tools[0]!, tools[0]!, tools[1]!])
    await fx.startRun(agent, { trace_level: 'summary' })
    expect(sent.map((s) => s.body)).toEqual([
      { name: 'conf-test-agent', behavior: 'autonomous' },
      { inputs: { steps: ['conf-a', 'conf-a', 'conf-b'] }, mode: 'live', trace_level: 'summary' },
    ])
  })

  it('fills ids, single-tool placeholders and the agent’s name and behaviour inside strings', async () => {
    const fx = fixtures([
      '--config',
      configFile({
        toolRun: {
          agent: { name: '{name}', behavior: '{behavior}', capabilities: ['call:{tool}'] },
          run: {
            inputs: { tool_ids: '{tool_ids}', first: 'id={tool_id}', by: '{name}/{behavior}' },
            mode: 'live',
          },
        },
      }),
    ])
    await fx.startRun(await fx.newToolAgent(tools))
    expect(sent.map((s) => s.body)).toEqual([
      { name: 'conf-test-agent', behavior: 'autonomous', capabilities: ['call:conf-a'] },
      {
        inputs: { tool_ids: ['tool_a', 'tool_b'], first: 'id=tool_a', by: 'conf-test-agent/autonomous' },
        mode: 'live',
      },
    ])
  })

  it('never sends the declaration with the agents and runs that call no tool (spec requests)', async () => {
    const fx = fixtures([
      '--config',
      configFile({
        toolRun: {
          agent: { name: '{name}', behavior: '{behavior}', planner: 'explicit' },
          run: { inputs: { steps: '{tools}' }, mode: 'live', trace_level: 'detailed', x_plan: true },
        },
      }),
    ])
    await fx.startRun(await fx.newAgent())
    expect(sent.map((s) => s.body)).toEqual([
      { name: 'conf-test-agent', behavior: 'autonomous', capabilities: [] },
      specExample,
    ])
  })

  it('refuses a declaration that is not a body or names no tool', () => {
    expect(() => resolveConfig(['--config', configFile({ toolRun: { run: 'x' } })], {})).toThrow(
      /toolRun\.run must be an object/,
    )
    expect(() =>
      resolveConfig(
        ['--config', configFile({ toolRun: { agent: { name: '{name}', behavior: '{behavior}' } } })],
        {},
      ),
    ).toThrow(ConfigError)
    expect(() =>
      resolveConfig(['--config', configFile({ toolRun: { agent: { name: '{name}' }, run: {} } })], {}),
    ).toThrow(/toolRun names no tool/)
  })
})
