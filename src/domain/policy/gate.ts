import type { PolicyDeniedDetail } from '../errors.js'
import type { RunRecord } from '../runs/types.js'
import { scopeAllows } from '../scopes.js'
import type { ToolRecord } from '../tools/types.js'
import { findEnvelope } from './envelopes.js'

export type GateDecision =
  | { kind: 'allow' }
  | { kind: 'escalate'; queue: string; reason: string }
  | { kind: 'deny'; message: string; detail: PolicyDeniedDetail }

/**
 * The policy gate, asked before every tool call (spec §3). Denials come first (a human cannot approve what the
 * key may not do), then escalations: the run's envelope, the tool's bound envelope, then the agent's behaviour.
 */
export function decide(run: RunRecord, tool: ToolRecord): GateDecision {
  const envelope = run.envelope
  const deny = (message: string, violation: string, observed: unknown, limit: unknown): GateDecision => ({
    kind: 'deny',
    message,
    detail: {
      envelope: envelope.name,
      violation,
      observed,
      limit,
      escalation_queue: envelope.escalation_queue,
    },
  })
  const missing = tool.policyBinding.required_scopes.filter((s) => !scopeAllows(run.caller.scopes, s))
  if (missing.length > 0) {
    return deny(
      `The run's key lacks scopes the tool ${tool.name} requires`,
      'missing_scope',
      missing,
      tool.policyBinding.required_scopes,
    )
  }
  if (envelope.allowed_tools !== null && !envelope.allowed_tools.includes(tool.name)) {
    return deny(
      `Envelope ${envelope.name} does not allow the tool ${tool.name}`,
      'tool_not_allowed',
      tool.name,
      envelope.allowed_tools,
    )
  }
  if (run.toolCalls + 1 > envelope.max_tool_calls) {
    return deny(
      `Envelope ${envelope.name} allows ${envelope.max_tool_calls} tool calls per run`,
      'max_tool_calls',
      run.toolCalls + 1,
      envelope.max_tool_calls,
    )
  }
  if (envelope.requires_approval) {
    return {
      kind: 'escalate',
      queue: envelope.escalation_queue,
      reason: `envelope ${envelope.name} requires approval for every tool call`,
    }
  }
  const bound = findEnvelope(tool.policyBinding.envelope)
  if (bound?.requires_approval) {
    return {
      kind: 'escalate',
      queue: bound.escalation_queue,
      reason: `tool ${tool.name} is bound to envelope ${bound.name}, which requires approval`,
    }
  }
  if (run.behavior === 'supervised') {
    return {
      kind: 'escalate',
      queue: envelope.escalation_queue,
      reason: 'supervised agent: every tool call needs approval',
    }
  }
  if (run.behavior === 'hybrid' && !tool.idempotent) {
    return {
      kind: 'escalate',
      queue: envelope.escalation_queue,
      reason: `hybrid agent: tool ${tool.name} is not idempotent`,
    }
  }
  return { kind: 'allow' }
}
