/**
 * Extension operations that stop answering as their contract documents: the OpenAPI document is no longer served,
 * and a redelivery of a logged delivery is refused as if the delivery did not exist.
 */
import { type Mutant, type ProxiedResponse, pathOnly } from '../proxy.js'

const notFound: ProxiedResponse = {
  status: 404,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    error: { code: 'not_found', message: 'Not found', detail: {}, request_id: 'req_mutant' },
  }),
}

export function extensionMutants(): Mutant[] {
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
  ]
}
