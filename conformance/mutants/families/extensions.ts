/**
 * Extension operations that stop answering as their contract documents: the OpenAPI document is no longer served,
 * a redelivery of a logged delivery is refused as if the delivery did not exist, a destination's change is refused
 * as if the destination did not exist, and a destination's write-only secret comes back when it is read.
 */
import { editJson, type Mutant, type ProxiedResponse, pathOnly } from '../proxy.js'

const notFound: ProxiedResponse = {
  status: 404,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    error: { code: 'not_found', message: 'Not found', detail: {}, request_id: 'req_mutant' },
  }),
}

const DESTINATION = /^\/v1\/destinations\/[^/]+$/

export function extensionMutants(): Mutant[] {
  /** The secrets destinations were created with, as the deployment was sent them. */
  const secrets: unknown[] = []
  return [
    {
      id: 'openapi-document-not-served',
      description: 'GET /openapi.json answers 404: the served contract is gone',
      targets: ['surface.extension-operations'],
      request: (req) => (req.method === 'GET' && pathOnly(req.path) === '/openapi.json' ? notFound : req),
    },
    {
      id: 'redeliver-unknown-delivery',
      description:
        'Redelivering a delivery from the log answers 404, as if the log named deliveries that do not exist',
      targets: ['surface.extension-operations'],
      request: (req) =>
        req.method === 'POST' &&
        /^\/v1\/webhooks\/[^/]+\/deliveries\/[^/]+\/redeliver$/.test(pathOnly(req.path))
          ? notFound
          : req,
    },
    {
      id: 'destination-change-refused',
      description:
        'PATCH /v1/destinations/{id} answers 404, as if the destination it just listed did not exist',
      targets: ['destinations.operations'],
      request: (req) => (req.method === 'PATCH' && DESTINATION.test(pathOnly(req.path)) ? notFound : req),
    },
    {
      id: 'destination-secret-answered',
      description:
        'Reading a destination answers the secrets it was created with: write-only credentials leak',
      targets: ['destinations.cloudevents-binary'],
      request(req) {
        if (req.method === 'POST' && pathOnly(req.path) === '/v1/destinations') {
          try {
            secrets.push((JSON.parse(req.body) as { secrets?: unknown }).secrets)
          } catch {
            // not JSON: nothing to remember
          }
        }
        return req
      },
      response: (req, res) =>
        req.method === 'GET' && DESTINATION.test(pathOnly(req.path))
          ? editJson(res, (b) => ({ ...b, secrets: secrets.at(-1) }))
          : res,
    },
  ]
}
