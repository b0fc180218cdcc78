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
  // Stryker disable next-line BooleanLiteral,BlockStatement,ConditionalExpression: no built-in envelope lists allowed_tools (ENVELOPES all have null) and a run's envelope is always one of them: unreachable
  if (envelope.allowed_tools !== null && !envelope.allowed_tools.includes(tool.name)) {
    return deny(
      // Stryker disable next-line StringLiteral: no built-in envelope lists allowed_tools (ENVELOPES all have null) and a run's envelope is always one of them: unreachable
      `Envelope ${envelope.name} does not allow the tool ${tool.name}`,
      // Stryker disable next-line StringLiteral: no built-in envelope lists allowed_tools (ENVELOPES all have null) and a run's envelope is always one of them: unreachable
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
  // Stryker disable next-line ObjectLiteral,StringLiteral: equivalent, the executor calls the tool on any decision that is neither deny nor escalate
  return { kind: 'allow' }
}
