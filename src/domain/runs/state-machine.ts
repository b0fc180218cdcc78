import { ApiError } from '../errors.js'
import type { RunStatus } from './types.js'

export type { RunStatus }

export type RunAction =
  | 'start'
  | 'escalate'
  | 'approve'
  | 'reject'
  | 'complete'
  | 'fail'
  | 'pause'
  | 'resume'
  | 'cancel'

export const RUN_STATUSES: readonly RunStatus[] = [
  'queued',
  'running',
  'awaiting_approval',
  'paused',
  'succeeded',
  'failed',
  'cancelled',
]
export const TERMINAL: readonly RunStatus[] = ['succeeded', 'failed', 'cancelled']

/** Where `resume` goes: back to the status the run was paused from. */
export const PAUSED_FROM = 'paused_from' as const

/**
 * The one transition table of the run lifecycle. The OpenAPI document (`x-run-state-machine`) and the README
 * show the same rows; a test keeps them equal.
 */
export const TRANSITIONS: readonly {
  from: readonly RunStatus[]
  action: RunAction
  to: RunStatus | typeof PAUSED_FROM
}[] = [
  { from: ['queued'], action: 'start', to: 'running' },
  { from: ['running'], action: 'escalate', to: 'awaiting_approval' },
  { from: ['awaiting_approval'], action: 'approve', to: 'running' },
  { from: ['awaiting_approval'], action: 'reject', to: 'failed' },
  { from: ['running'], action: 'complete', to: 'succeeded' },
  // From paused too: a call already in flight when the pause arrived may still fail.
  { from: ['running', 'paused'], action: 'fail', to: 'failed' },
  { from: ['queued', 'running', 'awaiting_approval'], action: 'pause', to: 'paused' },
  { from: ['paused'], action: 'resume', to: PAUSED_FROM },
  { from: ['queued', 'running', 'awaiting_approval', 'paused'], action: 'cancel', to: 'cancelled' },
]

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
  if (row.to === PAUSED_FROM) return pausedFrom ?? 'queued'
  return row.to
}
