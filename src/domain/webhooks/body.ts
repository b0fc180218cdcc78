import { EVENT_KINDS as CONTRACT_EVENT_KINDS } from '../../../generated/contract.js'
import { toRfc3339 } from '../clock.js'
import type { UnsignedBody } from './signing.js'

/** Every event kind a subscription may name (design.md § Events): the contract's EventKind, generated. */
export const EVENT_KINDS = CONTRACT_EVENT_KINDS

export type EventKind = (typeof EVENT_KINDS)[number]

const KNOWN = new Set<string>(EVENT_KINDS)

export function isEventKind(kind: string): kind is EventKind {
  return KNOWN.has(kind)
}

export interface LoggedEvent {
  id: string
  kind: string
  ts: number
  data: Record<string, unknown>
}

/** Spec §6 lists the run.awaiting_approval body field by field; that body carries exactly those (plus `id`). */
const SPEC_FIELDS: Partial<Record<string, readonly string[]>> = {
  'run.awaiting_approval': ['run_id', 'agent_id', 'step_id', 'queue', 'reason', 'payload_preview'],
}

/**
 * The delivery body: `id` (the event id), `event` (its kind), `ts` (RFC 3339) and the event's own fields, which
 * for run.awaiting_approval are exactly spec §6's `run_id, agent_id, step_id, queue, reason, payload_preview`.
 * The envelope fields win over same-named data fields, and `signature` is added only when signing.
 */
export function deliveryBody(event: LoggedEvent): UnsignedBody {
  const { signature: _dropped, ...data } = event.data
  const only = SPEC_FIELDS[event.kind]
  // Stryker disable next-line MethodExpression: equivalent: a run.awaiting_approval event's data has all six fields (an absent one would be undefined, which the JSON leaves out).
  const fields = only ? Object.fromEntries(only.filter((k) => k in data).map((k) => [k, data[k]])) : data
  return { ...fields, id: event.id, event: event.kind, ts: toRfc3339(event.ts) }
}
