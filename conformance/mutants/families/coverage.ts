/**
 * Mutants for the checks that carry the contract coverage to every operation (spec §8 on all POSTs and every
 * request of a workspace; the contract's bounds on path ids): a deployment that gets a rule right where the older
 * checks looked (agent creation, the tool list) and wrong everywhere else.
 */
import { errorAnswer, header, type Mutant, type ProxiedResponse, parseJson, pathOnly } from '../proxy.js'

export function coverageMutants(): Mutant[] {
  const firstAnswers = new Map<string, ProxiedResponse>()
  return [
    {
      id: 'idempotency-body-checked-for-agents-only',
      description:
        'A reused Idempotency-Key with another body is refused 409 on agent creation only; every other POST replays the first answer',
      targets: ['idempotency.different-body-409-every-post'],
      request(req) {
        const key = header(req, 'idempotency-key')
        if (req.method !== 'POST' || !key || pathOnly(req.path) === '/v1/agents') return req
        return firstAnswers.get(`${header(req, 'authorization')} ${req.path} ${key}`) ?? req
      },
      response(req, res) {
        const key = header(req, 'idempotency-key')
        if (req.method === 'POST' && key && res.status < 300)
          firstAnswers.set(`${header(req, 'authorization')} ${req.path} ${key}`, res)
        return res
      },
    },
    {
      id: 'ratelimit-judged-after-the-route',
      description:
        'The rate limit is applied by the tool list alone: over its limit, the workspace still reaches every other operation (an unknown id answers 404)',
      targets: ['ratelimit.429-every-operation'],
      response(req, res) {
        if (res.status !== 429 || pathOnly(req.path) === '/v1/tools') return res
        return errorAnswer(404, 'not_found', 'No such resource')
      },
    },
    {
      id: 'trace-level-ignored',
      description: 'Every run is started with the summary trace whatever trace_level the start asks for',
      targets: ['runs.trace-levels-and-outcomes'],
      request(req) {
        if (req.method !== 'POST' || !/^\/v1\/agents\/[^/]+\/runs$/.test(pathOnly(req.path))) return req
        const body = parseJson(req.body)
        return body ? { ...req, body: JSON.stringify({ ...body, trace_level: 'summary' }) } : req
      },
    },
    {
      id: 'redelivery-overlaps-an-attempt',
      description: 'Redelivery is accepted while an attempt of the same delivery is still in progress',
      targets: ['surface.extension-operations'],
      response(req, res) {
        if (req.method !== 'POST' || !/\/redeliver$/.test(pathOnly(req.path)) || res.status !== 409)
          return res
        return { status: 202, headers: { 'content-type': 'application/json' }, body: '{}' }
      },
    },
    {
      id: 'stream-ingest-answer-without-ref',
      description: 'An ingest over the stream is answered without the ref it was sent with',
      targets: ['stream.protocol-messages'],
      streamMessage(message) {
        if (message.type !== 'ingested') return message
        const { ref: _ref, ...rest } = message
        return rest
      },
    },
    {
      id: 'stream-pushes-on-a-poll',
      description:
        'The stream pushes what landed on a 2 s poll (as the reference’s fallback poll would alone), not when it commits',
      targets: ['stream.pushed-promptly'],
      streamPoll: {
        periodMs: 2000,
        holds: (message) => message.type === 'record' || message.type === 'event',
      },
    },
    severedTopicMutant(),
    {
      id: 'silent-stream-peers-kept',
      description:
        'A stream or graphql-ws socket whose client answers no ping is never dropped: a peer gone without a close holds its socket for good',
      targets: ['stream.silent-peer-dropped', 'graphql.ws-silent-peer-dropped'],
      answersPings: true,
    },
    {
      id: 'resume-past-window-without-gap',
      description:
        'A resume from before more than the replay window silently starts at the newest messages: no gap says what was skipped',
      targets: ['stream.protocol-messages'],
      // The gap becomes a message the client ignores, as if it had never been sent.
      streamMessage: (message) =>
        message.type === 'gap' ? { type: 'heartbeat', ts: new Date().toISOString() } : message,
    },
    {
      id: 'overlong-path-id-crashes',
      description:
        'A path id longer than the contract’s maxLength reaches the store, which fails: 500 in plain text',
      targets: ['surface.documented-statuses'],
      request(req) {
        if (
          !pathOnly(req.path)
            .split('/')
            .some((segment) => segment.length > 64)
        )
          return req
        return { status: 500, headers: { 'content-type': 'text/plain' }, body: 'Internal Server Error' }
      },
    },
  ]
}

/**
 * A server that reads each topic once for all its subscribers and, when one of them disconnects, stops feeding the
 * topic for the others too: after a connection that held a topic closes, that topic's records reach nobody.
 */
function severedTopicMutant(): Mutant {
  const held = new Map<object, string[]>()
  const severed = new Set<string>()
  return {
    id: 'stream-topic-severed-when-a-subscriber-leaves',
    description:
      'When one subscriber of a topic disconnects, the topic’s shared reader stops, and the other subscribers get nothing more',
    targets: ['stream.subscriber-outlives-another'],
    clientMessage(message, connection) {
      if (message.type === 'subscribe' && Array.isArray(message.topics))
        held.set(connection, [...(held.get(connection) ?? []), ...message.topics.map(String)])
      return message
    },
    streamClosed(connection) {
      for (const topic of held.get(connection) ?? []) severed.add(topic)
      held.delete(connection)
    },
    streamMessage: (message) =>
      message.type === 'record' && severed.has(String(message.topic)) ? undefined : message,
  }
}
