import type { Clock } from '../clock.js'
import { ApiError, notFound } from '../errors.js'
import type { EventsPort } from '../events/ports.js'
import { newId } from '../ids.js'
import type { Slice } from '../pagination.js'
import type { Db } from '../ports.js'
import type { QuotaGate } from '../quotas/service.js'
import type { ToolRepository } from './ports.js'
import { checkToolDefinition } from './providers.js'
import type { PolicyBinding, ToolRecord } from './types.js'

export interface RegisterToolInput {
  name: string
  provider: string
  input_schema?: Record<string, unknown> | undefined
  output_schema?: Record<string, unknown> | undefined
  policy_binding: PolicyBinding
  idempotent?: boolean | undefined
  config?: Record<string, unknown> | undefined
}

export class ToolService {
  constructor(
    private readonly db: Db,
    private readonly repo: ToolRepository,
    private readonly clock: Clock,
    private readonly events: EventsPort,
    /** The `tools` quota (active tools), counted in the tool's transaction. */
    private readonly quotas: QuotaGate,
  ) {}

  async register(workspaceId: string, input: RegisterToolInput): Promise<ToolRecord> {
    checkToolDefinition(input.provider, input.config ?? {}, {
      input_schema: input.input_schema ?? {},
      output_schema: input.output_schema ?? {},
    })
    const now = this.clock.now()
    const tool = await this.db.transaction(async (tx) => {
      await this.quotas.take(tx, workspaceId, 'tools')
      const created = await this.repo.in(tx).insertIfNameFree({
        // Stryker disable next-line StringLiteral: an id's prefix is the reference's choice (§2 "Tool identifier field and tool response fields: not shown").
        id: newId('tool', now),
        workspaceId,
        name: input.name,
        provider: input.provider,
        inputSchema: input.input_schema ?? {},
        outputSchema: input.output_schema ?? {},
        policyBinding: input.policy_binding,
        // Stryker disable next-line BooleanLiteral: equivalent, the contract's default (ToolIdempotent: false) fills it first on both surfaces (GraphQL validates with the REST route's schema)
        idempotent: input.idempotent ?? false,
        config: input.config ?? {},
        createdAt: now,
      })
      if (!created) {
        // Stryker disable next-line ObjectLiteral: the 409's code (§7 "Error codes other than policy_denied: not shown"), words and detail (§7 "Context") are the reference's choice
        throw new ApiError('already_exists', `An active tool named "${input.name}" already exists`, {
          // Stryker disable next-line StringLiteral: §7 detail is "Context", its fields named for policy_denied only: the reference's choice
          field: 'name',
          name: input.name,
        })
      }
      await this.events.append(tx, {
        workspaceId,
        kind: 'tool.registered',
        subjectId: created.id,
        data: { tool_id: created.id, name: created.name, status: 'active' },
      })
      return created
    })
    this.events.notify()
    return tool
  }

  async get(workspaceId: string, id: string): Promise<ToolRecord> {
    const tool = await this.repo.get(workspaceId, id)
    if (!tool) throw notFound('Tool')
    return tool
  }

  list(
    workspaceId: string,
    includeRetired: boolean,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<ToolRecord>> {
    return this.repo.list(workspaceId, includeRetired, afterSeq, limit)
  }

  /** Idempotent: retiring a retired tool returns it unchanged. */
  async retire(workspaceId: string, id: string): Promise<ToolRecord> {
    const now = this.clock.now()
    const retired = await this.db.transaction(async (tx) => {
      const repo = this.repo.in(tx)
      const tool = await repo.get(workspaceId, id)
      // Stryker disable next-line ConditionalExpression: equivalent, a tool that is not there is not retired and the read after the transaction answers the same 404
      if (!tool) throw notFound('Tool')
      if (await repo.retire(workspaceId, id, now)) {
        await this.quotas.release(tx, workspaceId, 'tools')
        await this.events.append(tx, {
          workspaceId,
          kind: 'tool.retired',
          subjectId: id,
          data: { tool_id: id, name: tool.name, status: 'retired' },
        })
        // Stryker disable next-line BooleanLiteral: a speed path, notify only wakes the dispatcher its own poll wakes anyway
        return true
      }
      // Stryker disable next-line BooleanLiteral: a speed path, notify only wakes the dispatcher its own poll wakes anyway
      return false
    })
    // Stryker disable next-line ConditionalExpression: a speed path, notify only wakes the dispatcher its own poll wakes anyway
    if (retired) this.events.notify()
    return this.get(workspaceId, id)
  }
}
