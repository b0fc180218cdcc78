/**
 * Delivery bodies as structured-mode CloudEvents, as the own-ids-and-pages dialect sends every event but
 * `run.awaiting_approval`: `type`, `id`, `source`, `time` and the event's fields under `data`, with the `signature`
 * member beside them. Spec §6 shows one delivery body, `run.awaiting_approval`'s, its fields at the top (kept so),
 * and says of the others: "Delivery bodies of events other than run.awaiting_approval: not shown"; §5.5's
 * `signature` field is in every body.
 */
import type { Json } from '../proxy.js'

/** The reference's flat body as a structured-mode CloudEvent (its `signature` kept at the top). */
export function asCloudEvent(body: Json): Json {
  const { id, event, ts, signature, ...data } = body
  return {
    specversion: '1.0',
    id,
    type: event,
    source: '/agent-operations',
    time: ts,
    datacontenttype: 'application/json',
    data,
    signature,
  }
}
