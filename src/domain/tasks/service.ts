import type { Db } from '../../store/db.js'
import { AgentRepo } from '../../store/repos/agents.js'
import { type TaskRecord, TaskRepo } from '../../store/repos/tasks.js'
import type { Clock } from '../clock.js'
import { notFound } from '../errors.js'
import { newId } from '../ids.js'
import type { Ports } from '../ports.js'

export interface AssignTaskInput {
  description: string
  data_source?: string | undefined
  priority?: number | undefined
}

export interface Caller {
  keyId: string
  identity: string
  scopes: string[]
}

export class TaskService {
  readonly repo: TaskRepo
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly ports: Ports,
  ) {
    this.repo = new TaskRepo(db)
  }

  /** Assigning a task starts the run that carries it; from then on the task follows that run. */
  async assign(
    workspaceId: string,
    agentId: string,
    input: AssignTaskInput,
    caller: Caller,
  ): Promise<TaskRecord> {
    const agent = await new AgentRepo(this.db).get(workspaceId, agentId)
    if (!agent) throw notFound('Agent')
    const now = this.clock.now()
    const task = await this.db.transaction(async (tx) => {
      const created = await new TaskRepo(tx).insert({
        id: newId('task', now),
        workspaceId,
        agentId,
        description: input.description,
        dataSource: input.data_source ?? null,
        priority: input.priority ?? 3,
        status: 'queued',
        runId: null,
        result: null,
        createdAt: now,
        updatedAt: now,
      })
      await this.ports.events?.append(tx, {
        workspaceId,
        kind: 'task.created',
        subjectId: created.id,
        data: { task_id: created.id, agent_id: agentId, status: 'queued', run_id: null },
      })
      return created
    })
    this.ports.events?.notify()
    const runs = this.ports.runs
    if (!runs) return task
    const started = await runs.startTaskRun({
      workspaceId,
      taskId: task.id,
      agentId,
      description: task.description,
      dataSource: task.dataSource,
      priority: task.priority,
      caller,
    })
    await this.repo.attachRun(task.id, started.runId, started.status, this.clock.now())
    return (await this.repo.get(workspaceId, task.id)) ?? task
  }

  async get(workspaceId: string, id: string): Promise<TaskRecord> {
    const task = await this.repo.get(workspaceId, id)
    if (!task) throw notFound('Task')
    return task
  }
}
