import type { Envelope } from '../runs/types.js'

export type { Envelope }

/**
 * The built-in policy envelopes (spec §3 "policy envelope"). A run resolves its envelope once, at start, and
 * keeps that copy, so changing an envelope never changes a run already under way.
 */
export const ENVELOPES: Record<string, Envelope> = {
  default: {
    name: 'default',
    max_steps: 25,
    max_tool_calls: 25,
    allowed_tools: null,
    // Stryker disable next-line ArrayDeclaration,StringLiteral: never read (ingest checks a record's policy_class against the workspace's classes): no answer of the API shows it
    allowed_policy_classes: ['public', 'internal'],
    requires_approval: false,
    escalation_queue: 'ops-review',
  },
  gated: {
    name: 'gated',
    max_steps: 25,
    max_tool_calls: 25,
    allowed_tools: null,
    // Stryker disable next-line ArrayDeclaration,StringLiteral: never read (ingest checks a record's policy_class against the workspace's classes): no answer of the API shows it
    allowed_policy_classes: ['public', 'internal', 'confidential'],
    requires_approval: true,
    escalation_queue: 'human-review',
  },
  restricted: {
    name: 'restricted',
    max_steps: 10,
    max_tool_calls: 3,
    allowed_tools: null,
    // Stryker disable next-line ArrayDeclaration,StringLiteral: never read (ingest checks a record's policy_class against the workspace's classes): no answer of the API shows it
    allowed_policy_classes: ['public'],
    requires_approval: false,
    escalation_queue: 'security-review',
  },
}

export function findEnvelope(name: string): Envelope | undefined {
  return Object.hasOwn(ENVELOPES, name) ? ENVELOPES[name] : undefined
}
