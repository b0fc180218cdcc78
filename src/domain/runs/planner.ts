import { ApiError } from '../errors.js'
import type { ToolRecord } from '../tools/types.js'
import type { PlanStep } from './types.js'

/** The tools a run's start asks for, before they are looked up. */
export interface WantedTools {
  names: readonly string[]
  /** Whether `inputs.plan` named them (every one must then be active), or they are the agent's capabilities. */
  fromPlan: boolean
}

/**
 * `inputs.plan` when the start gives one (refused 400 unless it is an array of tool names), else the agent's
 * capabilities.
 */
export function wantedTools(capabilities: readonly string[], inputs: Record<string, unknown>): WantedTools {
  const plan = inputs.plan
  if (plan === undefined) return { names: capabilities, fromPlan: false }
  if (!Array.isArray(plan) || plan.some((n) => typeof n !== 'string')) {
    throw new ApiError('invalid_request', 'inputs.plan must be an array of tool names', {
      issues: [{ path: 'inputs.plan', message: 'must be an array of strings' }],
      fields: ['inputs.plan'],
    })
  }
  return { names: plan as string[], fromPlan: true }
}

/**
 * The reference runtime's deterministic planner, so a client can predict every step:
 * - `inputs.plan` (an array of tool names) is the plan, in that order (a name may repeat);
 * - otherwise one step per capability of the agent that names an active tool, in capability order.
 * Steps are numbered `step_1` … `step_n`.
 */
export function planRun(wanted: WantedTools, activeTools: ReadonlyMap<string, ToolRecord>): PlanStep[] {
  let names: readonly string[]
  if (wanted.fromPlan) {
    const unknown = wanted.names.filter((n) => !activeTools.has(n))
    if (unknown.length > 0) {
      throw new ApiError(
        'invalid_request',
        `inputs.plan names tools that are not active: ${unknown.join(', ')}`,
        {
          issues: [{ path: 'inputs.plan', message: 'unknown or retired tool' }],
          fields: ['inputs.plan'],
          unknown_tools: unknown,
        },
      )
    }
    names = wanted.names
  } else {
    names = wanted.names.filter((c) => activeTools.has(c))
  }
  return names.map((name, i) => {
    const tool = activeTools.get(name) as ToolRecord
    return { step_id: `step_${i + 1}`, tool: tool.name, tool_id: tool.id }
  })
}
