/**
 * What a webhook delivery is about, wherever its body keeps it. Spec §6 shows one body, `run.awaiting_approval`'s,
 * its fields at the top and its kind in `event`; "Delivery bodies of events other than run.awaiting_approval: not
 * shown". So another kind's fields may sit at the top or in an envelope: under `data` (a CloudEvent in structured
 * mode, `{type, data}` envelopes), `data.object` (Stripe's) or `payload`, and its kind in `event` or `type`.
 * Matching a delivery to what a check caused reads it through these; the checks of the one shown body read that
 * body's own fields.
 */
import type { Delivery } from './receiver.js'

/** A delivery, or only its parsed body (what the receiver's answering rules see). */
type Carrier = Pick<Delivery, 'body'>

/** The event kind a delivery carries: `event`, else `type` (CloudEvents). */
export function eventOf(d: Carrier): unknown {
  return d.body?.event ?? d.body?.type
}

const ENVELOPES: ReadonlyArray<readonly string[]> = [['data'], ['data', 'object'], ['payload']]

/** A field of the event a delivery carries: at the top of its body, else inside the first envelope that has it. */
export function fieldOf(d: Carrier, name: string): unknown {
  const body = d.body
  if (body === undefined) return undefined
  if (body[name] !== undefined) return body[name]
  for (const path of ENVELOPES) {
    let node: unknown = body
    for (const key of path)
      node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined
    if (node !== null && typeof node === 'object' && (node as Record<string, unknown>)[name] !== undefined)
      return (node as Record<string, unknown>)[name]
  }
  return undefined
}
