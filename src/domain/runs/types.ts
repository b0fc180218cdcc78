import { type RUN_STATUSES, TRACE_FRAME_KINDS } from '../../../generated/contract.js'

/** The contract's run statuses (generated/contract.ts, from `x-run-state-machine`). */
export type RunStatus = (typeof RUN_STATUSES)[number]

export interface Envelope {
  name: string
  max_steps: number
  max_tool_calls: number
  /** Tool names the envelope allows; null allows every tool. */
  allowed_tools: string[] | null
  /** Ingest policy classes the envelope's runs may touch. */
  allowed_policy_classes: string[]
  /** Every tool call under this envelope waits for a human. */
  requires_approval: boolean
  escalation_queue: string
}

export interface PlanStep {
  step_id: string
  tool: string
  tool_id: string
}

export interface Awaiting {
  step_id: string
  queue: string
  reason: string
  requested_at: number
}

export interface StepResult {
  step_id: string
  tool: string
  tool_id: string
  result: string
}

export interface Outcome {
  status: 'succeeded' | 'failed' | 'cancelled'
  results: StepResult[]
  error: { code: string; message: string; detail?: Record<string, unknown> } | null
}

export interface RunCaller {
  keyId: string
  identity: string
  scopes: string[]
}

export interface RunRecord {
  seq: number
  id: string
  workspaceId: string
  agentId: string
  taskId: string | null
  status: RunStatus
  pausedFrom: RunStatus | null
  mode: 'live' | 'dry_run'
  traceLevel: 'summary' | 'detailed'
  inputs: Record<string, unknown>
  envelope: Envelope
  behavior: 'autonomous' | 'supervised' | 'hybrid'
  caller: RunCaller
  priority: number
  plan: PlanStep[]
  nextStep: number
  /** The step whose policy decision is recorded but whose call has not been (crash recovery). */
  inFlightStep: number | null
  toolCalls: number
  approved: string[]
  awaiting: Awaiting[]
  results: StepResult[]
  outcome: Outcome | null
  frameCount: number
  /** Plan counts, kept with the frames that change them (see RunRecorder). */
  stepsCompleted: number
  stepsEscalated: number
  createdAt: number
  startedAt: number | null
  finishedAt: number | null
  updatedAt: number
}

/** What a trace frame records (design.md § Runs): the contract's TraceFrameKind, generated. */
export const FRAME_KINDS = TRACE_FRAME_KINDS
export type FrameKind = (typeof FRAME_KINDS)[number]

export interface FrameRecord {
  seq: number
  ts: number
  stepId: string | null
  kind: FrameKind
  tool: string | null
  toolId: string | null
  policy: 'allow' | 'escalate' | 'deny' | null
  latencyMs: number | null
  result: string | null
  detail: Record<string, unknown> | null
}
