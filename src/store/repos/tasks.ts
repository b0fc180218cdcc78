import type { Outcome, RunStatus } from '../../domain/runs/types.js'
import type { TaskRepository } from '../../domain/tasks/ports.js'
import type { TaskRecord } from '../../domain/tasks/types.js'
import { fromJson, type Queryable, toJson } from '../db.js'

interface TaskRow extends Record<string, unknown> {
  seq: number
  id: string
  workspace_id: string
  agent_id: string
  description: string
  data_source: string | null
  priority: number
  status: string
  run_id: string | null
  result: string | null
  created_at: number
  updated_at: number
}

function toTask(row: TaskRow): TaskRecord {
  return {
    seq: Number(row.seq),
    id: row.id,
    workspaceId: row.workspace_id,
    agentId: row.agent_id,
    description: row.description,
    dataSource: row.data_source,
    priority: Number(row.priority),
    status: row.status as RunStatus,
    runId: row.run_id,
    result: row.result === null ? null : fromJson<Outcome>(row.result),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}

export class TaskRepo implements TaskRepository {
  constructor(private readonly db: Queryable) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): TaskRepo {
    return new TaskRepo(tx)
  }

  async insert(t: Omit<TaskRecord, 'seq'>): Promise<TaskRecord> {
    const row = await this.db.one<TaskRow>(
      `INSERT INTO tasks (id, workspace_id, agent_id, description, data_source, priority, status, run_id, result,
         created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
      [
        t.id,
        t.workspaceId,
        t.agentId,
        t.description,
        t.dataSource,
        t.priority,
        t.status,
        t.runId,
        t.result === null ? null : toJson(t.result),
        t.createdAt,
        t.updatedAt,
      ],
    )
    return toTask(row!)
  }

  async get(workspaceId: string, id: string): Promise<TaskRecord | undefined> {
    const row = await this.db.one<TaskRow>('SELECT * FROM tasks WHERE id = $1 AND workspace_id = $2', [
      id,
      workspaceId,
    ])
    return row ? toTask(row) : undefined
  }

  async attachRun(id: string, runId: string, status: RunStatus, at: number): Promise<void> {
    await this.db.run(
      'UPDATE tasks SET run_id = $2, status = $3, updated_at = $4 WHERE id = $1 AND run_id IS NULL',
      [id, runId, status, at],
    )
  }
}
