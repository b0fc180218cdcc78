import type { Outcome, RunStatus } from '../runs/types.js'

export interface TaskRecord {
  seq: number
  id: string
  workspaceId: string
  agentId: string
  description: string
  dataSource: string | null
  priority: number
  status: RunStatus
  runId: string | null
  /** The carrying run's outcome once it is terminal. */
  result: Outcome | null
  createdAt: number
  updatedAt: number
}
