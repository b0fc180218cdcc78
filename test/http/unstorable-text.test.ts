/**
 * Text no store can keep (U+0000, lone UTF-16 surrogates) is refused as 400 invalid_request naming where it was,
 * identically on SQLite and PostgreSQL and over the stream; other control characters are stored faithfully.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findUnstorableText, unstorableReason } from '../../src/domain/text.js'
import { openClient } from '../stream/client.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'

/** A string with one unstorable code unit somewhere in it. */
const unstorable = fc
  .tuple(
    fc.string({ maxLength: 12 }),
    fc.constantFrom('\u0000', '\uD800', '\uDBFF', '\uDC00', '\uDFFF'),
    fc.string({ maxLength: 12 }),
  )
  // A high surrogate followed by a low one from the tail would be a valid pair: keep the bad unit alone.
  .map(([head, bad, tail]) => `${head}${bad}${bad >= '\uD800' && bad <= '\uDBFF' ? 'x' : ''}${tail}`)

/** Percent-encodes UTF-8, writing a lone surrogate as the 3 bytes a careless encoder would send (CESU-8). */
function urlEncode(text: string): string {
  let out = ''
  for (const ch of text) {
    const code = ch.charCodeAt(0)
    if (ch.length === 1 && code >= 0xd800 && code <= 0xdfff) {
      const bytes = [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
      out += bytes.map((b) => `%${b.toString(16).toUpperCase()}`).join('')
    } else out += encodeURIComponent(ch)
  }
  return out
}

/** Control characters other than NUL, which both stores keep. */
const controls = fc
  .array(
    fc.integer({ min: 1, max: 0x1f }).map((n) => String.fromCharCode(n)),
    { minLength: 1, maxLength: 6 },
  )
  .map((cs) => `ctl${cs.join('')}\u007f`)

describe.each(backends())('unstorable text on $name', (backend) => {
  let t: TestServer
  let token: string

  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl() })
    token = (await t.createKey()).token
  })
  afterAll(() => t?.close())

  it('refuses it in bodies, paths and query values with 400 invalid_request, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(unstorable, async (bad) => {
        const body = await t.request('POST', '/v1/agents', {
          token,
          body: { name: bad, behavior: 'autonomous' },
        })
        expect(body.status, body.text).toBe(400)
        expect(body.body.error.code).toBe('invalid_request')
        expect(body.body.error.detail.fields).toEqual(['name'])

        const nested = await t.request('POST', '/v1/grid/connectors/c1/ingest', {
          token,
          body: {
            records: [
              { id: 'r1', ts: '2026-11-23T06:00:00Z', source: 's', policy_class: 'public', body: { k: bad } },
            ],
          },
        })
        expect(nested.status, nested.text).toBe(400)
        expect(nested.body.error.detail.fields).toEqual(['records.0.body.k'])

        // A URL carries UTF-8 bytes: a lone surrogate can only arrive as its (invalid) 3-byte form, which
        // decodes to nothing unstorable; NUL arrives as %00 and is refused.
        const hasNul = bad.includes('\u0000')
        const path = await t.request('GET', `/v1/runs/${urlEncode(`run_${bad}`)}`, { token, unchecked: true })
        expect(path.status, path.text).toBe(hasNul ? 400 : 404)
        expect(path.body.error.code).toBe(hasNul ? 'invalid_request' : 'not_found')

        const query = await t.request('GET', `/v1/tools?cursor=${urlEncode(bad)}`, { token })
        expect(query.status, query.text).toBe(400)
        expect(query.body.error.code).toBe(hasNul ? 'invalid_request' : 'invalid_cursor')
        if (hasNul) expect(query.body.error.detail.fields).toEqual(['cursor'])
      }),
      { numRuns: 15 },
    )
  })

  it('stores other control characters exactly as sent', async () => {
    await fc.assert(
      fc.asyncProperty(controls, async (name) => {
        const created = await t.request('POST', '/v1/agents', {
          token,
          body: { name, behavior: 'autonomous' },
        })
        expect(created.status, created.text).toBe(201)
        const read = await t.request('GET', `/v1/agents/${created.body.agent_id}`, { token })
        expect(read.body.name).toBe(name)
      }),
      { numRuns: 10 },
    )
  })

  it('refuses it in stream messages with an invalid_request error naming the field', async () => {
    const client = await openClient(t.baseUrl, token)
    try {
      client.send({
        type: 'ingest',
        ref: 'b1',
        connector_id: 'c1',
        records: [
          { id: 'a\u0000b', ts: '2026-11-23T06:00:00Z', source: 's', policy_class: 'public', body: {} },
        ],
      })
      const error = await client.waitFor((m) => m.type === 'error')
      expect(error.ref).toBe('b1')
      expect(error.error.code).toBe('invalid_request')
      expect(error.error.message).toContain('records.0.id')
      // The socket stays usable.
      client.send({ type: 'ping' })
      await client.waitFor((m) => m.type === 'pong')
    } finally {
      await client.close()
    }
  })
})

describe('findUnstorableText', () => {
  /** Every string and object key of a JSON value, by plain recursion. */
  const texts = (v: unknown): string[] =>
    typeof v === 'string'
      ? [v]
      : Array.isArray(v)
        ? v.flatMap(texts)
        : typeof v === 'object' && v !== null
          ? Object.entries(v).flatMap(([k, inner]) => [k, ...texts(inner)])
          : []

  it('finds something exactly when some string or key of the value is unstorable', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 6 }),
      fc.constantFrom('\u0000', '\uD800x', 'ok'),
    )
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        text,
        fc.integer(),
        fc.constant(null),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(text, tie('node'), { maxKeys: 4 }),
      ),
    })).node
    fc.assert(
      fc.property(value, (v) => {
        const expected = texts(v).some((t) => unstorableReason(t) !== undefined)
        expect(findUnstorableText(v) !== undefined).toBe(expected)
      }),
      { numRuns: 2000 },
    )
  })
})
