import type { Queryable } from '../store/db.js'

/**
 * What the spine needs from features built beside it (runs, the event log). They are late-bound so the
 * agents, tasks and tools services work before those features are registered and never import them.
 */
export interface RunsPort {
  /** Cancels every run of the agent that is not terminal (agent deletion). */
  terminateAgentRuns(workspaceId: string, agentId: string): Promise<void>
  /** Runs of the agent that are not terminal. */
  countActiveRuns(workspaceId: string, agentId: string): Promise<number>
  /** countActiveRuns for many agents at once (batched loading); agents without active runs may be absent. */
  countActiveRunsMany(workspaceId: string, agentIds: readonly string[]): Promise<Map<string, number>>
  /** Starts the run that carries a newly assigned task; returns its id and status. */
  startTaskRun(task: TaskRunRequest): Promise<{ runId: string; status: string }>
}

export interface TaskRunRequest {
  workspaceId: string
  taskId: string
  agentId: string
  description: string
  dataSource: string | null
  priority: number
  /** The caller's key, whose scopes the policy gate checks tool bindings against. */
  caller: { keyId: string; identity: string; scopes: string[] }
}

export interface DomainEvent {
  workspaceId: string
  kind: string
  /** The resource the event is about (run, agent, task, tool, connector). */
  subjectId: string
  data: Record<string, unknown>
}

export interface EventsPort {
  /** Appends inside the caller's transaction, so the event exists exactly when the change does. */
  append(tx: Queryable, event: DomainEvent): Promise<void>
  /** Wakes consumers after the transaction committed. */
  notify(): void
}

export interface Ports {
  runs?: RunsPort
  events?: EventsPort
}
