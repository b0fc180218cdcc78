import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PACKAGE_ROOT, resolveConfig } from '../src/config.js'
import { nextCursor, ownId, pageItems } from '../src/fixtures.js'
import { rateWindows } from '../src/ratewindows.js'
import { parseSignature, timestampSeconds } from '../src/signature.js'
import { ConfigError } from '../src/types.js'
import { scratchDir } from './scratch.js'

const example = (name: string) => join(PACKAGE_ROOT, 'examples', name)

describe('declarations in the config file', () => {
  it('reads both example styles', () => {
    const reference = resolveConfig(['--config', example('config.json')], {}).config
    expect(reference.stream.topic).toBe('connector:{connector}')
    expect(reference.paging).toEqual({})
    expect(reference.profile.tools.succeed).toEqual({ provider: 'builtin:echo' })
    // The reference example spells out the default toolRun.
    expect(reference.toolRun).toEqual(resolveConfig([], {}).config.toolRun)
    expect(reference.graphqlQueries).toEqual(resolveConfig([], {}).config.graphqlQueries)
    const foreign = resolveConfig(['--config', example('config.foreign.json')], {}).config
    expect(foreign.paging).toEqual({ cursorField: 'meta.continuation', itemsField: 'results' })
    expect(foreign.stream.subscribe).toEqual({ op: 'join', channels: '{topics}' })
    expect(foreign.rateLimitHeaders?.burst).toEqual({
      remaining: 'quota-short-left',
      reset: 'quota-short-renews-in',
      limit: 'quota-short-size',
    })
    expect(foreign.approval.method).toBe('PUT')
    expect(foreign.signatureTimestamp).toBe('rfc3339')
    expect(foreign.signatureTemplate).toBe('{header:X-Acme-Timestamp}.{body}')
    expect(foreign.notServed).toEqual(['GET /v1/agents', 'GET /v1/grid/connectors/{connector_id}/records'])
    expect(foreign.runStatuses).toEqual({
      running: ['in_progress'],
      paused: ['suspended'],
      succeeded: ['completed'],
      failed: ['errored', 'timed_out'],
      cancelled: ['canceled'],
    })
    expect(foreign.graphqlUrl).toBe('https://api.example.com/graphql')
    expect(foreign.graphqlQueries.agent.variables).toEqual({ agentId: '{id}' })
    expect(foreign.toolRun.run).toEqual({
      inputs: { steps: '{tools}' },
      mode: 'live',
      trace_level: 'detailed',
    })
  })

  it('sends no tool config for the succeed tool unless the file gives one', () => {
    expect(resolveConfig([], {}).config.profile.tools.succeed.config).toBeUndefined()
  })

  it('refuses declarations of the wrong shape with a ConfigError', async () => {
    const { writeFileSync } = await import('node:fs')
    const dir = scratchDir('conf-decl-')
    const bad = (content: unknown) => {
      const file = join(dir, `${Math.random()}.json`)
      writeFileSync(file, JSON.stringify(content))
      return () => resolveConfig(['--config', file], {})
    }
    expect(bad({ stream: { topic: 'no-placeholder' } })).toThrow(ConfigError)
    expect(bad({ rateLimitHeaders: { burst: { remaining: 'a' } } })).toThrow(/reset/)
    expect(bad({ signature: { timestamp: 'iso' } })).toThrow(ConfigError)
    expect(bad({ paging: 'next' })).toThrow(ConfigError)
    expect(bad({ graphqlQueries: { run: { query: '{ run }' } } })).toThrow(/variable whose value is "\{id\}"/)
    expect(bad({ graphqlQueries: { agent: { variables: { id: '{id}' } } } })).toThrow(/needs a "query"/)
    // "{id}" in the query text is not a placeholder: it could be a selection set.
    expect(
      bad({ graphqlQueries: { agent: { query: 'query { agent(id: "{id}") {id} }', variables: {} } } }),
    ).toThrow(ConfigError)
    for (const replayWindow of [0, -1, 1.5, '20'])
      expect(bad({ stream: { replayWindow } })).toThrow(/replayWindow must be a positive integer/)
    for (const maxAttempts of [0, -1, 1.5, '8'])
      expect(bad({ webhooks: { maxAttempts } })).toThrow(/webhooks.maxAttempts must be a positive integer/)
    expect(bad({ destinations: { runLink: 'https://console.example.com/runs' } })).toThrow(
      /destinations.runLink must contain "\{run_id\}"/,
    )
    for (const runLink of ['/runs/{run_id}', 'ftp://console.example.com/runs/{run_id}', ''])
      expect(bad({ destinations: { runLink } })).toThrow(/destinations.runLink/)
    for (const failed of [[], [''], 3, [3]])
      expect(bad({ runStatuses: { failed } })).toThrow(/runStatuses.failed must be a status name/)
    expect(bad({ runStatuses: { failed: 'succeeded' } })).toThrow(/"succeeded" is named for both/)
    expect(bad({ runStatuses: { paused: ['suspended', 'awaiting_approval'] } })).toThrow(
      /spec's own statuses/,
    )
  })

  it('keeps declared run statuses, a name or a list, over the reference profile’s', async () => {
    const { writeFileSync } = await import('node:fs')
    const file = join(scratchDir('conf-decl-'), 'statuses.json')
    writeFileSync(
      file,
      JSON.stringify({ runStatuses: { succeeded: ['completed', 'done'], cancelled: 'canceled' } }),
    )
    expect(resolveConfig(['--config', file], {}).config.runStatuses).toEqual({
      running: ['running'],
      paused: ['paused'],
      succeeded: ['completed', 'done'],
      failed: ['failed'],
      cancelled: ['canceled'],
    })
    expect(resolveConfig([], {}).config.runStatuses.succeeded).toEqual(['succeeded'])
  })

  it('keeps a declared run link, and declares none by default', async () => {
    const { writeFileSync } = await import('node:fs')
    const file = join(scratchDir('conf-decl-'), 'run-link.json')
    writeFileSync(
      file,
      JSON.stringify({ destinations: { runLink: 'https://console.example.com/runs/{run_id}' } }),
    )
    expect(resolveConfig(['--config', file], {}).config.runLink).toBe(
      'https://console.example.com/runs/{run_id}',
    )
    expect(resolveConfig([], {}).config.runLink).toBeUndefined()
  })

  it('keeps a declared replay window beside the default subscribe message', async () => {
    const { writeFileSync } = await import('node:fs')
    const file = join(scratchDir('conf-decl-'), 'window.json')
    writeFileSync(file, JSON.stringify({ stream: { replayWindow: 20 } }))
    const { stream } = resolveConfig(['--config', file], {}).config
    expect(stream).toEqual({
      subscribe: { type: 'subscribe', topics: '{topics}' },
      topic: 'connector:{connector}',
      replayWindow: 20,
      declared: false,
    })
    expect(resolveConfig([], {}).config.stream.replayWindow).toBeUndefined()
  })

  it('keeps a declared retry count, and declares none by default', async () => {
    const { writeFileSync } = await import('node:fs')
    const file = join(scratchDir('conf-decl-'), 'attempts.json')
    writeFileSync(file, JSON.stringify({ webhooks: { maxAttempts: 5 } }))
    expect(resolveConfig(['--config', file], {}).config.webhookMaxAttempts).toBe(5)
    expect(resolveConfig([], {}).config.webhookMaxAttempts).toBeUndefined()
  })

  it('tells a declared subscribe message from the default one', async () => {
    const { writeFileSync } = await import('node:fs')
    const file = join(scratchDir('conf-decl-'), 'subscribe.json')
    const subscribe = { op: 'listen', channels: '{topics}' }
    writeFileSync(file, JSON.stringify({ stream: { subscribe } }))
    const { stream } = resolveConfig(['--config', file], {}).config
    expect(stream.subscribe).toEqual(subscribe)
    expect(stream.declared).toBe(true)
    expect(resolveConfig([], {}).config.stream.declared).toBe(false)
  })
})

describe('discovery where nothing is declared', () => {
  it('finds the next cursor under the names people use, and in a Link header', () => {
    expect(nextCursor({ data: [], next_cursor: 'a' })).toBe('a')
    expect(nextCursor({ items: [], next_page_token: 'b' })).toBe('b')
    expect(nextCursor({ results: [], next: '/v1/tools?limit=5&cursor=c%3D' })).toBe('c=')
    expect(nextCursor({ results: [], meta: { continuation_cursor: 'd' } })).toBe('d')
    expect(nextCursor([], { link: '<https://x/v1/tools?cursor=e&limit=2>; rel="next"' })).toBe('e')
    expect(nextCursor({ data: [], next_cursor: null })).toBeNull()
    expect(nextCursor({ results: [], meta: { continuation: 'f' } }, {}, 'meta.continuation')).toBe('f')
    expect(nextCursor({ data: [] })).toBeUndefined()
  })

  it('finds the items and a resource’s own id under either name', () => {
    expect(pageItems({ object: 'list', items: [1] })).toEqual([1])
    expect(pageItems({ results: [2], data: 'x' })).toEqual([2])
    expect(pageItems({ rows: [3] }, 'rows')).toEqual([3])
    expect(ownId({ agent_id: 'a' }, 'agent')).toBe('a')
    expect(ownId({ id: 'b' }, 'agent')).toBe('b')
  })

  it('reads both rate-limit windows in each header family', () => {
    const ietf = rateWindows({
      ratelimit: '"burst";r=4;t=7, "hourly";r=990;t=2040',
      'ratelimit-policy': '"burst";q=10;w=10, "hourly";q=1000;w=3600',
    })
    expect(ietf).toEqual([
      { name: 'burst', remaining: 4, reset: 7, limit: 10, length: 10 },
      { name: 'hourly', remaining: 990, reset: 2040, limit: 1000, length: 3600 },
    ])
    const legacy = rateWindows({
      'x-ratelimit-remaining': '99',
      'x-ratelimit-reset': '60',
      'x-ratelimit-burst-remaining': '9',
      'x-ratelimit-burst-reset': '2',
    })
    expect(legacy.map((w) => w.name).sort()).toEqual(['burst', 'unnamed'])
    const kong = rateWindows({
      'x-ratelimit-remaining-second': '4',
      'x-ratelimit-reset-second': '1',
      'x-ratelimit-remaining-hour': '900',
      'x-ratelimit-reset-hour': '1200',
    })
    expect(kong.map((w) => w.name).sort()).toEqual(['hour', 'second'])
    // §8 "Names of the rate-limit headers: not shown": `Rate-Limit` with a hyphen is as legal as `RateLimit`.
    const hyphen = rateWindows({
      'x-rate-limit-remaining': '99',
      'x-rate-limit-reset': '60',
      'x-rate-limit-burst-remaining': '9',
      'x-rate-limit-burst-reset': '2',
    })
    expect(hyphen.map((w) => [w.name, w.remaining]).sort()).toEqual([
      ['burst', 9],
      ['unnamed', 99],
    ])
    expect(rateWindows({ 'x-ratelimit-remaining': '5', 'x-ratelimit-reset': '1' })).toHaveLength(1)
    const declared = rateWindows(
      { 'q-a': '1', 'q-a-t': '2', 'q-b': '3', 'q-b-t': '4' },
      { burst: { remaining: 'q-a', reset: 'q-a-t' }, sustained: { remaining: 'q-b', reset: 'q-b-t' } },
    )
    expect(declared.map((w) => [w.name, w.remaining, w.reset])).toEqual([
      ['burst', 1, 2],
      ['sustained', 3, 4],
    ])
  })

  it("reads the earlier drafts' one RateLimit dictionary, and a reset written as a date", () => {
    expect(rateWindows({ ratelimit: 'limit=100, remaining=25, reset=5' })).toEqual([
      { name: 'unnamed', remaining: 25, reset: 5, limit: 100 },
    ])
    const now = Date.parse('2026-12-06T20:00:00Z')
    // A window's reset as RFC 3339 (as some APIs write X-RateLimit-Reset) or as an HTTP-date, declared or not.
    const dated = rateWindows(
      {
        'x-ratelimit-remaining': '99',
        'x-ratelimit-reset': '2026-12-06T20:01:00Z',
        'x-ratelimit-burst-remaining': '0',
        'x-ratelimit-burst-reset': 'Sun, 06 Dec 2026 20:00:07 GMT',
      },
      undefined,
      now,
    )
    expect(dated.map((w) => [w.name, w.remaining, w.reset]).sort()).toEqual([
      ['burst', 0, 7],
      ['unnamed', 99, 60],
    ])
    const declared = rateWindows(
      { 'q-a': '1', 'q-a-t': '2026-12-06T20:00:02.500Z', 'q-b': '3', 'q-b-t': '4' },
      { burst: { remaining: 'q-a', reset: 'q-a-t' }, sustained: { remaining: 'q-b', reset: 'q-b-t' } },
      now,
    )
    expect(declared.map((w) => [w.name, w.reset])).toEqual([
      ['burst', 2.5],
      ['sustained', 4],
    ])
    // Not a date: the window cannot be read.
    expect(rateWindows({ 'x-ratelimit-remaining': '5', 'x-ratelimit-reset': 'soon' })).toEqual([])
  })

  it('accepts a signature timestamp in Unix seconds or RFC 3339, as declared', () => {
    const hex = 'a'.repeat(64)
    expect(parseSignature(`t=1700000000,v1=${hex}`)?.t).toBe('1700000000')
    expect(parseSignature(`t=2026-11-24T19:00:00Z,v1=${hex}`)?.t).toBe('2026-11-24T19:00:00Z')
    expect(parseSignature(`t=2026-11-24T19:00:00Z,v1=${hex}`, 'unix')).toBeUndefined()
    expect(parseSignature(`t=1700000000,v1=${hex}`, 'rfc3339')).toBeUndefined()
    expect(timestampSeconds('2026-11-24T19:00:00+01:00')).toBe(Date.parse('2026-11-24T18:00:00Z') / 1000)
  })
})
