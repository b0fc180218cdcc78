import { fromJson, type Queryable, toJson } from '../db.js'

export interface TaskRecord {
  seq: number
  id: string
  workspaceId: string
  agentId: string
  description: string
  dataSource: string | null
  priority: number
  status: string
  runId: string | null
  result: unknown
  createdAt: number
  updatedAt: number
}

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
    status: row.status,
    runId: row.run_id,
    result: row.result === null ? null : fromJson<unknown>(row.result),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}

export class TaskRepo {
  constructor(private readonly db: Queryable) {}

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

  async attachRun(id: string, runId: string, status: string, at: number): Promise<void> {
    await this.db.run('UPDATE tasks SET run_id = $2, status = $3, updated_at = $4 WHERE id = $1', [
      id,
      runId,
      status,
      at,
    ])
  }

  /** Keeps a task's status and result in step with the run that carries it. */
  async followRun(runId: string, status: string, result: unknown, at: number): Promise<void> {
    await this.db.run('UPDATE tasks SET status = $2, result = $3, updated_at = $4 WHERE run_id = $1', [
      runId,
      status,
      result === null || result === undefined ? null : toJson(result),
      at,
    ])
  }
}
