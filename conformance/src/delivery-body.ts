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

/** The event id a delivery carries, if the deployment gives one: its body's `id`, or a `webhook-id` header. */
export function eventIdOf(d: Pick<Delivery, 'body' | 'headers'>): string | undefined {
  if (typeof d.body?.id === 'string' && d.body.id !== '') return d.body.id
  const header = d.headers['webhook-id']
  return typeof header === 'string' && header !== '' ? header : undefined
}

/**
 * Deliveries with one of each event: a delivery repeating an event id already listed is left out (delivery is at
 * least once: an event whose answer was lost is sent again under its id). Deliveries without an id all stay.
 */
export function oneOfEachEvent<T extends Pick<Delivery, 'body' | 'headers'>>(deliveries: T[]): T[] {
  const seen = new Set<string>()
  return deliveries.filter((d) => {
    const id = eventIdOf(d)
    if (id === undefined) return true
    if (seen.has(id)) return false
    seen.add(id)
    return true
  })
}
