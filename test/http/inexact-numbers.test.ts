/**
 * Numbers the service would keep other than as written (an integer no double holds exactly, a number beyond a
 * double's range) are refused as 400 invalid_request naming where they were, in bodies, stream messages and GraphQL,
 * and nothing is stored; an integer a double holds exactly, however large, is kept as sent.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findInexactNumber, isInexactNumber } from '../../src/domain/json-numbers.js'
import { openClient } from '../stream/client.js'
import { startTestServer, type TestServer } from '../support/server.js'

const BIG = '123456789012345678901234567890'
const JSON_TYPE = { 'content-type': 'application/json' }
const record = (body: string) =>
  `{"records":[{"id":"r1","ts":"2026-11-23T06:00:00Z","source":"s","policy_class":"public","body":${body}}]}`

describe('inexact numbers over HTTP, the stream and GraphQL', () => {
  let t: TestServer
  let token: string
  let agentId: string

  beforeAll(async () => {
    t = await startTestServer()
    token = (await t.createKey()).token
    const agent = await t.request('POST', '/v1/agents', {
      token,
      body: { name: 'n', behavior: 'autonomous' },
    })
    agentId = agent.body.agent_id
  })
  afterAll(() => t?.close())

  it('refuses an integer a double cannot hold, naming its place, and starts no run', async () => {
    const before = await t.request('GET', `/v1/agents/${agentId}`, { token })
    const res = await t.request('POST', `/v1/agents/${agentId}/runs`, {
      token,
      headers: JSON_TYPE,
      rawBody: `{"inputs":{"period":"q3","n":[1,${BIG}]},"mode":"live","trace_level":"detailed"}`,
    })
    expect(res.status, res.text).toBe(400)
    expect(res.body.error.code).toBe('invalid_request')
    expect(res.body.error.detail.fields).toEqual(['inputs.n.1'])
    expect(res.body.error.message).toContain(BIG)
    expect(res.body.error.message).toContain('cannot be kept exactly')
    const after = await t.request('GET', `/v1/agents/${agentId}`, { token })
    expect(after.body).toEqual(before.body)
  })

  it('refuses one inside an ingest record, so no lineage root covers a number the client never sent', async () => {
    const res = await t.request('POST', '/v1/grid/connectors/c-inexact/ingest', {
      token,
      headers: JSON_TYPE,
      rawBody: record(`{"k":{"id":-${BIG}}}`),
    })
    expect(res.status, res.text).toBe(400)
    expect(res.body.error.detail.fields).toEqual(['records.0.body.k.id'])
    // The refused batch was its first: the connector has no record at all.
    const stored = await t.request('GET', '/v1/grid/connectors/c-inexact/records', { token })
    expect(stored.status, stored.text).toBe(404)
  })

  it('refuses a number beyond a double’s range, which JSON would write back as null', async () => {
    const res = await t.request('POST', `/v1/agents/${agentId}/runs`, {
      token,
      headers: JSON_TYPE,
      rawBody: '{"inputs":{"x":1e400},"mode":"live"}',
    })
    expect(res.status, res.text).toBe(400)
    expect(res.body.error.detail.fields).toEqual(['inputs.x'])
    expect(res.body.error.message).toContain('beyond the range')
  })

  it('keeps the integers it writes back as sent, however large, and digits inside strings', async () => {
    const res = await t.request('POST', `/v1/agents/${agentId}/runs`, {
      token,
      headers: JSON_TYPE,
      rawBody: `{"inputs":{"a":18446744073709552000,"b":-9007199254740992,"c":"${BIG}","d":1.5e300},"mode":"live"}`,
    })
    expect(res.status, res.text).toBe(201)
    expect(res.body.inputs).toEqual({ a: 2 ** 64, b: -(2 ** 53), c: BIG, d: 1.5e300 })
    expect(res.text).toContain('"a":18446744073709552000')
  })

  it('refuses one in a stream message with an invalid_request error naming the field, the socket still open', async () => {
    const client = await openClient(t.baseUrl, token)
    try {
      client.ws.send(
        `{"type":"ingest","ref":"b1","connector_id":"c1","records":[{"id":"r1","ts":"2026-11-23T06:00:00Z","source":"s","policy_class":"public","body":{"n":${BIG}}}]}`,
      )
      const error = await client.waitFor((m) => m.type === 'error')
      expect(error.ref).toBe('b1')
      expect(error.error.code).toBe('invalid_request')
      expect(error.error.message).toContain('records.0.body.n')
      client.send({ type: 'ping' })
      await client.waitFor((m) => m.type === 'pong')
    } finally {
      await client.close()
    }
  })

  it('refuses one written in a GraphQL document or its variables', async () => {
    const literal = await t.request('POST', '/v1/graphql', {
      token,
      body: {
        query: `mutation { startRun(agent_id: "${agentId}", input: { inputs: { n: ${BIG} } }) { run_id } }`,
      },
    })
    expect(literal.status, literal.text).toBe(200)
    expect(literal.body.data ?? null).toBeNull()
    expect(JSON.stringify(literal.body.errors)).toContain('cannot be kept exactly')

    const variables = encodeURIComponent(`{"n":${BIG}}`)
    const query = encodeURIComponent('query($n: Int) { __typename }')
    const get = await t.request('GET', `/v1/graphql?query=${query}&variables=${variables}`, { token })
    expect(get.status, get.text).toBe(400)
    expect(get.body.error.detail.fields).toEqual(['variables.n'])
  })
})

describe('findInexactNumber', () => {
  /** A JSON value written as text, with the place and literal of the first number no double keeps as written. */
  interface Written {
    text: string
    first?: { path: string; literal: string }
  }

  const literal = fc.oneof(
    fc.integer().map(String),
    fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
    fc.constantFrom(
      '9007199254740992',
      '9007199254740993',
      '1152921504606846977',
      '1e400',
      '-2.5e-400',
      '0.5',
    ),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  )
  /** Strings and keys with digit runs and escapes, which are never numbers. */
  const text = fc.oneof(fc.string({ maxLength: 5 }), fc.constantFrom(BIG, `a\\"${BIG}`, 'e400', '\\\\'))
  const quote = (s: string) => JSON.stringify(s)
  const at = (path: string, key: string | number) => (path ? `${path}.${key}` : String(key))

  const written = (path: string): fc.Arbitrary<Written> =>
    fc
      .letrec<{ node: Written }>((tie) => ({
        node: fc.oneof(
          { depthSize: 'small', withCrossShrink: true },
          literal.map((l) => ({ text: l })),
          text.map((s) => ({ text: quote(s) })),
          fc
            .array(tie('node'), { maxLength: 4 })
            .map((items) => ({ text: `[${items.map((i) => i.text).join(',')}]` })),
          fc
            .uniqueArray(fc.tuple(text, tie('node')), { maxLength: 4, selector: ([k]) => k })
            .map((members) => ({ text: `{${members.map(([k, v]) => `${quote(k)}:${v.text}`).join(',')}}` })),
        ),
      }))
      .node.map((w) => ({ text: w.text, first: firstInexact(w.text, path) }))

  /** The integer JSON writes for an integral double, its exponent form spelt out in digits. */
  function writtenBack(value: number): bigint {
    const [mantissa = '', exponent] = JSON.stringify(value).split('e')
    if (exponent === undefined) return BigInt(mantissa)
    const [whole = '', fraction = ''] = mantissa.split('.')
    return BigInt(whole + fraction + '0'.repeat(Number(exponent) - fraction.length))
  }

  /** The oracle: the first literal refused, found by re-reading each number's own text by recursion. */
  function firstInexact(source: string, base: string): Written['first'] {
    const walk = (s: string, path: string): { rest: string; found?: Written['first'] } => {
      s = s.trimStart()
      if (s.startsWith('[')) {
        let rest = s.slice(1).trimStart()
        for (let i = 0; !rest.startsWith(']'); i++) {
          const item = walk(rest, at(path, i))
          if (item.found) return item
          rest = item.rest.trimStart().replace(/^,/, '')
        }
        return { rest: rest.slice(1) }
      }
      if (s.startsWith('{')) {
        let rest = s.slice(1).trimStart()
        while (!rest.startsWith('}')) {
          const key = /^"(?:[^"\\]|\\.)*"/.exec(rest)?.[0] ?? '""'
          const value = walk(rest.slice(key.length).trimStart().slice(1), at(path, JSON.parse(key) as string))
          if (value.found) return value
          rest = value.rest.trimStart().replace(/^,/, '').trimStart()
        }
        return { rest: rest.slice(1) }
      }
      if (s.startsWith('"')) return { rest: s.slice((/^"(?:[^"\\]|\\.)*"/.exec(s)?.[0] ?? '').length) }
      const number = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(s)?.[0] ?? ''
      const value = Number(number)
      const inexact =
        !Number.isFinite(value) || (/^-?\d+$/.test(number) && BigInt(number) !== writtenBack(value))
      return { rest: s.slice(number.length), found: inexact ? { path, literal: number } : undefined }
    }
    return walk(source, base).found
  }

  it('finds the first number kept other than as written, where it is, and nothing in any other text', () => {
    fc.assert(
      fc.property(written(''), (w) => {
        expect(findInexactNumber(w.text)).toEqual(w.first)
      }),
      { numRuns: 3000 },
    )
  })

  it('names the place under the path it is given', () => {
    expect(findInexactNumber(`{"a":[0,{"b":${BIG}}]}`, 'variables')).toEqual({
      path: 'variables.a.1.b',
      literal: BIG,
    })
  })

  it('tells an inexact literal from an exact one', () => {
    expect(isInexactNumber('9007199254740993')).toBe(true)
    expect(isInexactNumber('9007199254740992')).toBe(false)
    expect(isInexactNumber('1152921504606846976')).toBe(true)
    expect(isInexactNumber('18446744073709551616')).toBe(true)
    expect(isInexactNumber('18446744073709552000')).toBe(false)
    expect(isInexactNumber('-123456789012345680000000000000')).toBe(false)
    expect(isInexactNumber(`-${BIG}`)).toBe(true)
    expect(isInexactNumber('999999999999999')).toBe(false)
    expect(isInexactNumber('1e400')).toBe(true)
    expect(isInexactNumber('-1e400')).toBe(true)
    expect(isInexactNumber('1.7976931348623157e308')).toBe(false)
    expect(isInexactNumber('0.1')).toBe(false)
  })
})
