/**
 * Bad bodies for every surface (issue 44's fuzz): REST JSON bodies, GraphQL documents and variables, stream frames and
 * ingest batches, each a mutation of a valid request (a field swapped for any JSON value, dropped or nested deep) or
 * no request at all (any text, any JSON). `fuzzSurfaces` sends them to a server on loopback and counts the answers
 * by status; a stream frame counts as 500 when the server answers it with internal_error or closes the socket with
 * 1011. The test (test/fuzz) runs a few with a fixed seed; bench/fuzz.ts runs 10,000 per surface.
 */
import fc from 'fast-check'
import WebSocket from 'ws'

export const SURFACES = ['rest', 'graphql', 'stream', 'ingest'] as const
export type Surface = (typeof SURFACES)[number]

/** Answers by status, per surface. */
export type StatusCounts = Record<Surface, Map<number, number>>

export interface FuzzTarget {
  baseUrl: string
  token: string
  /** An agent of the token's workspace, for the routes under /v1/agents/{id}. */
  agentId: string
}

const json = fc.jsonValue({ maxDepth: 4 })

/** A valid body with one field replaced by any JSON value, dropped, or nested past the depth limit. */
function mutated(valid: Record<string, unknown>): fc.Arbitrary<string> {
  const keys = Object.keys(valid)
  return fc.oneof(
    fc
      .record({ key: fc.constantFrom(...keys), value: json })
      .map(({ key, value }) => JSON.stringify({ ...valid, [key]: value })),
    fc.constantFrom(...keys).map((key) => {
      const copy = { ...valid }
      delete copy[key]
      return JSON.stringify(copy)
    }),
    fc
      .record({ key: fc.constantFrom(...keys), depth: fc.integer({ min: 60, max: 3000 }) })
      .map(({ key, depth }) => {
        const body = JSON.stringify({ ...valid, [key]: 0 })
        return body.replace(`"${key}":0`, `"${key}":${'['.repeat(depth)}${']'.repeat(depth)}`)
      }),
    fc
      .record({ key: fc.string({ maxLength: 20 }), value: json })
      .map(({ key, value }) => JSON.stringify({ ...valid, [key]: value })),
  )
}

/** No request at all: any text, any JSON, or brackets opened and never closed. */
const junk: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 200 }),
  json.map((v) => JSON.stringify(v)),
  fc.integer({ min: 1, max: 5000 }).map((n) => '{"a":'.repeat(n)),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
)

const body = (valid: Record<string, unknown>) => fc.oneof({ weight: 3, arbitrary: mutated(valid) }, junk)

const restRoutes = (agentId: string) =>
  fc.constantFrom(
    { path: '/v1/agents', valid: { name: 'fuzz', behavior: 'autonomous', capabilities: ['search'] } },
    {
      path: '/v1/tools',
      valid: {
        name: 'fuzz',
        provider: 'builtin:echo',
        output_schema: {},
        policy_binding: { envelope: 'default', required_scopes: [] },
      },
    },
    {
      path: '/v1/webhooks',
      valid: { url: 'http://127.0.0.1:9/h', events: ['agent.created'], secret: 'fuzz-secret-0001' },
    },
    {
      path: '/v1/destinations',
      valid: {
        type: 'cloudevents',
        name: 'f',
        events: ['agent.created'],
        config: { url: 'http://127.0.0.1:9/d' },
      },
    },
    { path: `/v1/agents/${agentId}/runs`, valid: { inputs: { q: 1 }, mode: 'async', trace_level: 'full' } },
    { path: `/v1/agents/${agentId}/tasks`, valid: { title: 'fuzz', inputs: {} } },
  )

const graphqlBody = fc.oneof(
  mutated({
    query: 'mutation($i: AgentCreate!) { createAgent(input: $i) { agent_id } }',
    variables: { i: { name: 'fuzz', behavior: 'autonomous' } },
  }),
  fc
    .record({ query: fc.string({ maxLength: 300 }), variables: fc.option(json) })
    .map((b) => JSON.stringify(b)),
  fc.record({ depth: fc.integer({ min: 10, max: 2500 }) }).map(({ depth }) =>
    JSON.stringify({
      query: `{ agents(limit: ${'['.repeat(depth)}1${']'.repeat(depth)}) { next_cursor } }`,
    }),
  ),
  junk,
)

const record = { id: 'r', ts: '2026-01-01T00:00:00Z', source: 's', policy_class: 'public', body: { a: 1 } }
const ingestBody = fc.oneof(
  fc
    .array(
      fc.oneof(
        mutated(record).map((r) => JSON.parse(r) as unknown),
        json,
      ),
      { maxLength: 20 },
    )
    .map((records) => JSON.stringify({ records })),
  body({ records: [record] }),
)

const streamFrame = fc.oneof(
  mutated({ type: 'subscribe', topics: ['runs', 'connector:c'] }),
  mutated({ type: 'ingest', ref: 'r1', connector_id: 'c', records: [record] }),
  mutated({ type: 'unsubscribe', topics: ['runs'] }),
  junk,
)

async function post(target: FuzzTarget, path: string, text: string): Promise<number> {
  const res = await fetch(`${target.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
    body: text,
  })
  await res.arrayBuffer()
  return res.status
}

function count(counts: Map<number, number>, status: number): void {
  counts.set(status, (counts.get(status) ?? 0) + 1)
}

/** Sends `runs` bad bodies per surface (fast-check, `seed`), counting answers by status. */
export async function fuzzSurfaces(target: FuzzTarget, runs: number, seed: number): Promise<StatusCounts> {
  const counts: StatusCounts = { rest: new Map(), graphql: new Map(), stream: new Map(), ingest: new Map() }
  const options = { numRuns: runs, seed, endOnFailure: true }
  await fc.assert(
    fc.asyncProperty(
      restRoutes(target.agentId).chain((route) =>
        body(route.valid).map((text) => ({ path: route.path, text })),
      ),
      async ({ path, text }) => {
        count(counts.rest, await post(target, path, text))
      },
    ),
    options,
  )
  await fc.assert(
    fc.asyncProperty(graphqlBody, async (text) => {
      count(counts.graphql, await post(target, '/v1/graphql', text))
    }),
    options,
  )
  await fc.assert(
    fc.asyncProperty(ingestBody, async (text) => {
      count(counts.ingest, await post(target, '/v1/grid/connectors/fuzz/ingest', text))
    }),
    options,
  )
  await fuzzStream(target, runs, seed, counts.stream)
  return counts
}

/**
 * Stream frames on one socket (a new one when the server closes it): each frame waits for the server's answer or a
 * short quiet, then counts 500 for internal_error or a 1011 close, else 200 (answered or ignored) or the close code.
 */
async function fuzzStream(
  target: FuzzTarget,
  runs: number,
  seed: number,
  counts: Map<number, number>,
): Promise<void> {
  const frames = fc.sample(streamFrame, { numRuns: runs, seed })
  let socket: { ws: WebSocket; messages: string[]; closed?: number } | undefined
  const open = async () => {
    const ws = new WebSocket(`${target.baseUrl.replace(/^http/, 'ws')}/v1/stream`, {
      headers: { authorization: `Bearer ${target.token}` },
    })
    const state: { ws: WebSocket; messages: string[]; closed?: number } = { ws, messages: [] }
    ws.on('message', (d) => state.messages.push(d.toString()))
    ws.on('close', (code) => {
      state.closed = code
    })
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
    })
    return state
  }
  for (const frame of frames) {
    if (!socket || socket.closed !== undefined) socket = await open()
    const before = socket.messages.length
    socket.ws.send(frame)
    const deadline = Date.now() + 200
    while (socket.messages.length === before && socket.closed === undefined && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 2))
    const answers = socket.messages.slice(before)
    if (socket.closed === 1011 || answers.some((m) => m.includes('"internal_error"'))) count(counts, 500)
    else if (socket.closed !== undefined) count(counts, socket.closed)
    else count(counts, 200)
  }
  if (socket && socket.closed === undefined) {
    const ws = socket.ws
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve())
      ws.close()
    })
  }
}

/** The answers at 500 or above, per surface. */
export function serverErrors(counts: StatusCounts): Record<Surface, number> {
  const over = (m: Map<number, number>) =>
    [...m].filter(([s]) => s >= 500 && s < 1000).reduce((a, [, n]) => a + n, 0)
  return {
    rest: over(counts.rest),
    graphql: over(counts.graphql),
    stream: over(counts.stream),
    ingest: over(counts.ingest),
  }
}
