import {
  RUN_STATUSES as CONTRACT_STATUSES,
  RUN_TRANSITIONS,
  TERMINAL_RUN_STATUSES,
} from '../../../generated/contract.js'
import { ApiError } from '../errors.js'
import type { RunStatus } from './types.js'

export type { RunStatus }

export type RunAction = (typeof RUN_TRANSITIONS)[number]['action']

export const RUN_STATUSES: readonly RunStatus[] = CONTRACT_STATUSES
export const TERMINAL: readonly RunStatus[] = TERMINAL_RUN_STATUSES

/** Where `resume` goes: back to the status the run was paused from. */
export const PAUSED_FROM = 'paused_from' as const

/**
 * The one transition table of the run lifecycle: the contract's `x-run-state-machine`, generated into
 * generated/contract.ts (the README shows the same rows; a test keeps them equal).
 */
export const TRANSITIONS: readonly {
  from: readonly RunStatus[]
  action: RunAction
  to: RunStatus | typeof PAUSED_FROM
}[] = RUN_TRANSITIONS

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL.includes(status)
}

export function allowedActions(status: RunStatus): RunAction[] {
  return TRANSITIONS.filter((t) => t.from.includes(status)).map((t) => t.action)
}

/**
 * The status after `action`, or 409 invalid_state naming what is allowed. `pausedFrom` is only read for resume.
 */
export function transition(
  status: RunStatus,
  action: RunAction,
  pausedFrom: RunStatus | null = null,
): RunStatus {
  const row = TRANSITIONS.find((t) => t.action === action && t.from.includes(status))
  if (!row) {
    throw new ApiError('invalid_state', `Cannot ${action} a run that is ${status}`, {
      status,
      action,
      allowed_actions: allowedActions(status),
    })
  }
  // Stryker disable next-line StringLiteral: unreachable, resume is allowed only from paused, and pause always records pausedFrom
  if (row.to === PAUSED_FROM) return pausedFrom ?? 'queued'
  return row.to
}
