/**
 * Rewrites that mutants of several families share: the entries of a listed answer edited one by one, and fields
 * left out of a webhook or destination delivery.
 */
import type { Json, ProxiedRequest, ProxiedResponse } from './proxy.js'
import { editJson, parseJson, pathOnly } from './proxy.js'

/**
 * A mutant's `response`: each entry of the list (`data`) a GET of a path `path` matches answers goes through
 * `entry`; any other answer passes unchanged.
 */
export function editListEntries(
  path: RegExp,
  entry: (item: Json) => Json,
): (req: ProxiedRequest, res: ProxiedResponse) => ProxiedResponse {
  return (req, res) => {
    if (req.method !== 'GET' || !path.test(pathOnly(req.path))) return res
    return editJson(res, (b) =>
      Array.isArray(b.data) ? { ...b, data: (b.data as Json[]).map(entry) } : undefined,
    )
  }
}

/**
 * A mutant's `delivery`: a JSON delivery `which` picks (an event name, or a test of the body) is sent without
 * `fields`; one that carries none of them, and any other delivery, passes unchanged.
 */
export function dropFromDelivery(
  which: string | ((body: Json) => boolean),
  ...fields: string[]
): (req: ProxiedRequest) => ProxiedRequest {
  const picks = typeof which === 'string' ? (body: Json) => body.event === which : which
  return (req) => {
    const body = parseJson(req.body)
    if (!body || !picks(body) || !fields.some((f) => f in body)) return req
    const rest = Object.fromEntries(Object.entries(body).filter(([k]) => !fields.includes(k)))
    return { ...req, body: JSON.stringify(rest) }
  }
}
