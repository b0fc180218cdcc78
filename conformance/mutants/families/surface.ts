/**
 * Mutants for the contract's documented answers off the happy path (src/checks/surface.ts): a deployment whose
 * framework answers unknown routes itself, one whose agent reads check no scope, and one that lumps a body of the
 * wrong media type in with bad bodies, one whose 405 does not say which methods the path answers, and two that refuse
 * an upgrade they do not take instead of answering the plain request, one that refuses a bad WebSocket handshake in
 * plain text, and one that ignores a body's content coding.
 */
import { header, type Mutant, pathOnly } from '../proxy.js'

export function surfaceMutants(): Mutant[] {
  return [
    {
      id: 'unknown-route-bare-404',
      description: "Unknown routes get the web framework's own plain-text 404, not the error envelope",
      targets: ['surface.error-paths'],
      response(req, res) {
        const path = pathOnly(req.path)
        if (res.status !== 404 || (path.startsWith('/v1/') && !path.includes('conf-unknown-route')))
          return res
        return { status: 404, headers: { 'content-type': 'text/plain' }, body: '404 Not Found' }
      },
    },
    {
      id: 'method-not-allowed-without-allow',
      description:
        'A method a path does not answer is 405 with the envelope but no Allow header (RFC 9110 §15.5.6 requires one)',
      targets: ['surface.error-paths'],
      response(_req, res) {
        if (res.status !== 405) return res
        const { allow: _allow, ...headers } = res.headers
        return { ...res, headers }
      },
    },
    {
      id: 'h2c-ask-refused',
      description:
        'A request asking to upgrade to h2c (curl --http2 on http://) is refused 400, as a server that takes WebSocket upgrades only answers every other',
      targets: ['surface.upgrade-ignored'],
      request(req) {
        if (header(req, 'http2-settings') === undefined) return req
        return { status: 400, headers: { 'content-type': 'text/plain' }, body: 'Bad Request' }
      },
    },
    {
      id: 'websocket-handshake-off-the-stream-404',
      description:
        'A WebSocket handshake of a path that serves no WebSocket (GET /v1/tools) is refused 404, as a gateway that routes upgrades to the stream and GraphQL only',
      targets: ['surface.upgrade-ignored'],
      upgradePath: (path) => (/^\/v1\/(stream|graphql)\b/.test(path) ? path : undefined),
    },
    {
      id: 'handshake-refusal-plain',
      description:
        "A WebSocket handshake RFC 6455 does not allow (a malformed key, version 99) is refused with ws's own text/html 400: no envelope, no Sec-WebSocket-Version",
      targets: ['stream.bad-handshake-refused'],
      plainHandshakeRefusals: true,
    },
    {
      id: 'content-coding-ignored',
      description:
        'A body declared Content-Encoding: gzip is read as it is (the header ignored): plain JSON so declared is taken, a real gzip body would be garbage',
      targets: ['validation.content-coding-honoured'],
      request(req) {
        if (header(req, 'content-encoding') === undefined) return req
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([name]) => name.toLowerCase() !== 'content-encoding'),
        )
        return { ...req, headers }
      },
    },
    {
      id: 'agent-reads-ignore-scope',
      description:
        'The agent reads need no agents:read: a token without it reads the agent list and agents (answered as if it held the scope)',
      targets: ['surface.documented-statuses'],
      request(req, ctx) {
        const other = ctx.tokens.otherScope
        if (req.method !== 'GET' || !pathOnly(req.path).startsWith('/v1/agents')) return req
        if (!other || header(req, 'authorization') !== `Bearer ${other}`) return req
        return { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.narrowScope}` } }
      },
    },
    {
      id: 'wrong-media-type-400',
      description: 'A body that is not JSON is answered 400 like a malformed one, never 415',
      targets: ['surface.documented-statuses'],
      response(req, res) {
        if (res.status !== 415) return res
        const media = header(req, 'content-type') ?? ''
        return media.includes('json') ? res : { ...res, status: 400 }
      },
    },
  ]
}
