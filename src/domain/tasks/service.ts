import type { AgentRepository } from '../agents/ports.js'
import type { Clock } from '../clock.js'
import { notFound } from '../errors.js'
import type { EventsPort } from '../events/ports.js'
import { newId } from '../ids.js'
import type { Db } from '../ports.js'
import type { RunsPort } from '../runs/ports.js'
import type { RunCaller } from '../runs/types.js'
import type { TaskRepository } from './ports.js'
import type { TaskRecord } from './types.js'

export interface AssignTaskInput {
  description: string
  data_source?: string | undefined
  priority?: number | undefined
}

export class TaskService {
  constructor(
    private readonly db: Db,
    private readonly repo: TaskRepository,
    private readonly agents: AgentRepository,
    private readonly clock: Clock,
    private readonly events: EventsPort,
    private readonly runs: RunsPort,
  ) {}

  /** Assigning a task starts the run that carries it; from then on the task follows that run. */
  async assign(
    workspaceId: string,
    agentId: string,
    input: AssignTaskInput,
    caller: RunCaller,
  ): Promise<TaskRecord> {
    const agent = await this.agents.get(workspaceId, agentId)
    // Stryker disable next-line ConditionalExpression: unreachable, AgentService.get throws the 404 itself.
    if (!agent) throw notFound('Agent')
    const now = this.clock.now()
    const task = await this.db.transaction(async (tx) => {
      const created = await this.repo.in(tx).insert({
        // Stryker disable next-line StringLiteral: an id's prefix is the reference's choice (§2 types ids as strings).
        id: newId('task', now),
        workspaceId,
        agentId,
        description: input.description,
        dataSource: input.data_source ?? null,
        priority: input.priority ?? 3,
        // Stryker disable next-line StringLiteral: equivalent, attachRun replaces the row's first status with its run's before the task is answered.
        status: 'queued',
        runId: null,
        result: null,
        createdAt: now,
        updatedAt: now,
      })
      // Stryker disable ObjectLiteral,StringLiteral: §6 "Any other event kinds: not shown": task.created is the reference's own kind.
      // Stryker restore next-line ObjectLiteral: the event itself, not its kind's fields: an empty one fails the assignment (the event log refuses it)
      await this.events.append(tx, {
        workspaceId,
        kind: 'task.created',
        subjectId: created.id,
        data: { task_id: created.id, agent_id: agentId, status: 'queued', run_id: null },
      })
      // Stryker restore ObjectLiteral,StringLiteral
      return created
    })
    this.events.notify()
    const started = await this.runs.startTaskRun({
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
