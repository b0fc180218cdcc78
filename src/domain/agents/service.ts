import type { Db } from '../../store/db.js'
import { type AgentRecord, AgentRepo, type Behavior } from '../../store/repos/agents.js'
import type { Clock } from '../clock.js'
import { notFound } from '../errors.js'
import { newId } from '../ids.js'
import type { Ports } from '../ports.js'

export interface AgentView extends AgentRecord {
  status: 'idle' | 'running'
  activeRuns: number
}

export interface CreateAgentInput {
  name: string
  behavior: Behavior
  capabilities?: string[] | undefined
  policy_envelope?: string | undefined
}

export class AgentService {
  private readonly repo: AgentRepo
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly ports: Ports,
  ) {
    this.repo = new AgentRepo(db)
  }

  async create(workspaceId: string, input: CreateAgentInput): Promise<AgentView> {
    const now = this.clock.now()
    const agent = await this.db.transaction(async (tx) => {
      const created = await new AgentRepo(tx).insert({
        id: newId('agt', now),
        workspaceId,
        name: input.name,
        behavior: input.behavior,
        capabilities: input.capabilities ?? [],
        policyEnvelope: input.policy_envelope ?? 'default',
        createdAt: now,
        updatedAt: now,
      })
      await this.ports.events?.append(tx, {
        workspaceId,
        kind: 'agent.created',
        subjectId: created.id,
        data: { agent_id: created.id, name: created.name, status: 'idle' },
      })
      return created
    })
    this.ports.events?.notify()
    return { ...agent, status: 'idle', activeRuns: 0 }
  }

  async get(workspaceId: string, id: string): Promise<AgentView> {
    const agent = await this.repo.get(workspaceId, id)
    if (!agent) throw notFound('Agent')
    return this.withStatus(agent)
  }

  /** Many agents in a constant number of queries (GraphQL's batched loading); missing or foreign ids are absent. */
  async getMany(workspaceId: string, ids: readonly string[]): Promise<Map<string, AgentView>> {
    const agents = await this.repo.getMany(workspaceId, ids)
    const active = (await this.ports.runs?.countActiveRunsMany(workspaceId, ids)) ?? new Map<string, number>()
    return new Map(agents.map((a) => [a.id, statusOf(a, active.get(a.id) ?? 0)]))
  }

  /** Live agents only; used by runs to check ownership. */
  find(workspaceId: string, id: string): Promise<AgentRecord | undefined> {
    return this.repo.get(workspaceId, id)
  }

  async list(workspaceId: string, afterSeq: number, limit: number): Promise<AgentView[]> {
    const agents = await this.repo.list(workspaceId, afterSeq, limit)
    const ids = agents.map((a) => a.id)
    const active = (await this.ports.runs?.countActiveRunsMany(workspaceId, ids)) ?? new Map<string, number>()
    return agents.map((a) => statusOf(a, active.get(a.id) ?? 0))
  }

  /** Terminates the agent's runs first, so no run keeps working for an agent that no longer exists. */
  async delete(workspaceId: string, id: string): Promise<void> {
    const agent = await this.repo.get(workspaceId, id)
    if (!agent) throw notFound('Agent')
    await this.ports.runs?.terminateAgentRuns(workspaceId, id)
    const now = this.clock.now()
    const deleted = await this.db.transaction(async (tx) => {
      const changed = await new AgentRepo(tx).markDeleted(workspaceId, id, now)
      if (changed) {
        await this.ports.events?.append(tx, {
          workspaceId,
          kind: 'agent.deleted',
          subjectId: id,
          data: { agent_id: id, name: agent.name },
        })
      }
      return changed
    })
    if (!deleted) throw notFound('Agent')
    this.ports.events?.notify()
  }

  private async withStatus(agent: AgentRecord): Promise<AgentView> {
    const activeRuns = (await this.ports.runs?.countActiveRuns(agent.workspaceId, agent.id)) ?? 0
    return statusOf(agent, activeRuns)
  }
}

function statusOf(agent: AgentRecord, activeRuns: number): AgentView {
  return { ...agent, status: activeRuns > 0 ? 'running' : 'idle', activeRuns }
}
