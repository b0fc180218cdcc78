import type { Clock } from '../clock.js'
import { notFound } from '../errors.js'
import type { EventsPort } from '../events/ports.js'
import { newId } from '../ids.js'
import type { Slice } from '../pagination.js'
import type { Db } from '../ports.js'
import type { QuotaGate } from '../quotas/service.js'
import type { RunRepository, RunsPort } from '../runs/ports.js'
import type { AgentRepository } from './ports.js'
import type { AgentRecord, Behavior } from './types.js'

/** An agent as the API shows it. */
export interface AgentView extends Omit<AgentRecord, 'seq'> {
  status: 'idle' | 'running'
  activeRuns: number
}

/** A stored agent's view with its place in the workspace's creation order (the list's cursor). */
export interface ListedAgentView extends AgentView {
  seq: number
}

export interface CreateAgentInput {
  name: string
  behavior: Behavior
  capabilities?: string[] | undefined
  policy_envelope?: string | undefined
}

/**
 * The contract's operations of this service whose work writes only, every statement held back until the commit and
 * independent of the others. A keyed request to one may run as IdempotencyService.once's `writesOnly`. Such a write
 * must also be one no constraint can refuse (a fresh id), but for a quota's count: that refusal fails the commit
 * with quota_exceeded where the store counts at the commit (QuotaUsageRepository.takeAtCommit), and the answer the
 * route made is replaced by it.
 */
// Stryker disable next-line ArrayDeclaration: a speed path (a keyed write's deferred unit on PostgreSQL); the mutation run's reference runs on SQLite.
export const AGENT_WRITES_ONLY_OPERATIONS: readonly string[] = ['createAgent']

export class AgentService {
  constructor(
    private readonly db: Db,
    private readonly repo: AgentRepository,
    /** Read for each agent's active-run count; runs themselves are changed only through `runs`. */
    private readonly runRecords: RunRepository,
    private readonly clock: Clock,
    private readonly events: EventsPort,
    private readonly runs: RunsPort,
    /** The `agents` quota, counted in the agent's transaction. */
    private readonly quotas: QuotaGate,
  ) {}

  async create(workspaceId: string, input: CreateAgentInput): Promise<AgentView> {
    const now = this.clock.now()
    const agent: AgentView = {
      // Stryker disable next-line StringLiteral: an id's prefix is the reference's choice (§2 types ids as strings).
      id: newId('agt', now),
      workspaceId,
      name: input.name,
      behavior: input.behavior,
      // Stryker disable next-line ArrayDeclaration: defence in depth, the contract's default ([]) fills it on every surface (REST and GraphQL parse with the same schema) before the service.
      capabilities: input.capabilities ?? [],
      // Stryker disable next-line StringLiteral: defence in depth, the contract's default (default) fills it on every surface before the service.
      policyEnvelope: input.policy_envelope ?? 'default',
      createdAt: now,
      updatedAt: now,
      status: 'idle',
      activeRuns: 0,
    }
    // The insert and its event go out with the COMMIT on PostgreSQL, after the quota's count.
    await this.db.transaction(async (tx) => {
      await this.quotas.take(tx, workspaceId, 'agents')
      await this.repo.in(tx).insert(agent)
      // Stryker disable ObjectLiteral,StringLiteral: §6 "Any other event kinds: not shown": agent.created, agent.deleted and task.created are the reference's own kinds.
      // Stryker restore next-line ObjectLiteral: the event itself, not its kind's fields: an empty one fails the create (the event log refuses it)
      await this.events.append(tx, {
        workspaceId,
        kind: 'agent.created',
        subjectId: agent.id,
        data: { agent_id: agent.id, name: agent.name, status: 'idle' },
      })
    })
    // A restore comment must lead a statement: at the end of a block it binds to nothing and the disable runs on.
    // Stryker restore ObjectLiteral,StringLiteral
    this.events.notify()
    return agent
  }

  async get(workspaceId: string, id: string): Promise<AgentView> {
    const agent = await this.repo.get(workspaceId, id)
    if (!agent) throw notFound('Agent')
    const [view] = await this.withStatus(workspaceId, [agent])
    // Stryker disable next-line ConditionalExpression: unreachable, withStatus answers a view for each agent it is given.
    if (!view) throw notFound('Agent')
    return view
  }

  /** Many agents in a constant number of queries (GraphQL's batched loading); missing or foreign ids are absent. */
  async getMany(workspaceId: string, ids: readonly string[]): Promise<Map<string, AgentView>> {
    const agents = await this.withStatus(workspaceId, await this.repo.getMany(workspaceId, ids))
    return new Map(agents.map((a) => [a.id, a]))
  }

  async list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<ListedAgentView>> {
    const { rows, more } = await this.repo.list(workspaceId, afterSeq, limit)
    return { rows: await this.withStatus(workspaceId, rows), more }
  }

  /** Terminates the agent's runs first, so no run keeps working for an agent that no longer exists. */
  async delete(workspaceId: string, id: string): Promise<void> {
    const agent = await this.repo.get(workspaceId, id)
    // Stryker disable next-line ConditionalExpression: equivalent, an agent not found is not marked deleted either, and the 404 below answers.
    if (!agent) throw notFound('Agent')
    await this.runs.terminateAgentRuns(workspaceId, id)
    const now = this.clock.now()
    const deleted = await this.db.transaction(async (tx) => {
      const changed = await this.repo.in(tx).markDeleted(workspaceId, id, now)
      // Stryker disable all: the agents quota's release and the agent.deleted event: quotas are the reference's own limits (no spec sentence); §6 "Any other event kinds: not shown": agent.created, agent.deleted and task.created are the reference's own kinds.
      if (changed) {
        await this.quotas.release(tx, workspaceId, 'agents')
        // Stryker restore next-line ObjectLiteral: the event itself, not its kind's fields: an empty one fails the delete (the event log refuses it)
        await this.events.append(tx, {
          workspaceId,
          kind: 'agent.deleted',
          subjectId: id,
          data: { agent_id: id, name: agent.name },
        })
      }
      // Stryker restore all
      return changed
    })
    // Stryker disable next-line ConditionalExpression: reached only when a concurrent delete marked the agent first, which no sequential run provokes.
    if (!deleted) throw notFound('Agent')
    this.events.notify()
  }

  /** One count query for the whole page, however many agents it holds. */
  private async withStatus(workspaceId: string, agents: AgentRecord[]): Promise<ListedAgentView[]> {
    const active = await this.runRecords.countActiveByAgents(
      workspaceId,
      // Stryker disable next-line ArrowFunction: an agent's status and active-run count, §4 "Agent details and status" with no values named: the reference's choice.
      agents.map((a) => a.id),
    )
    return agents.map((agent) => viewOf(agent, active.get(agent.id) ?? 0))
  }
}

/** Field by field: on Node 20 a spread followed by more properties takes V8's slow path (see rate-limit.ts). */
function viewOf(agent: AgentRecord, activeRuns: number): ListedAgentView {
  return {
    seq: agent.seq,
    id: agent.id,
    workspaceId: agent.workspaceId,
    name: agent.name,
    behavior: agent.behavior,
    capabilities: agent.capabilities,
    policyEnvelope: agent.policyEnvelope,
    createdAt: agent.createdAt,
    updatedAt: agent.updatedAt,
    // Stryker disable next-line ConditionalExpression,EqualityOperator,StringLiteral: an agent's status and active-run count, §4 "Agent details and status" with no values named: the reference's choice.
    status: activeRuns > 0 ? 'running' : 'idle',
    activeRuns,
  }
}
