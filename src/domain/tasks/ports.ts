import type { TxBound } from '../ports.js'
import type { RunStatus } from '../runs/types.js'
import type { TaskRecord } from './types.js'

export interface TaskRepository extends TxBound<TaskRepository> {
  insert(t: Omit<TaskRecord, 'seq'>): Promise<TaskRecord>
  get(workspaceId: string, id: string): Promise<TaskRecord | undefined>
  /** Attaches the task's run unless the run got there first (`followTask`): a later status is never undone. */
  attachRun(id: string, runId: string, status: RunStatus, at: number): Promise<void>
}
