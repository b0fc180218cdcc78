import DataLoader from 'dataloader'
import type { AuthContext } from '../api/caller.js'
import type { AgentView } from '../domain/agents/service.js'
import type { Services } from '../services.js'

/** The services resolvers and subscriptions call: the ones REST's routes use, and the stream's topic feeds. */
export type GraphqlServices = Pick<
  Services,
  'agents' | 'runs' | 'tasks' | 'tools' | 'webhooks' | 'ingestion' | 'events' | 'topicFeeds'
>

/** Everything a resolver may use: the caller, the services REST uses, and per-request batch loaders. */
export interface GraphqlContext {
  services: GraphqlServices
  auth: AuthContext
  requestId: string
  /** Agents by id, loaded together per tick: a page of runs with their agents costs a constant number of queries. */
  agents: DataLoader<string, AgentView | null>
}

export function createContext(
  services: GraphqlServices,
  auth: AuthContext,
  requestId: string,
): GraphqlContext {
  return {
    services,
    auth,
    requestId,
    agents: new DataLoader(async (ids) => {
      const found = await services.agents.getMany(auth.workspaceId, ids)
      return ids.map((id) => found.get(id) ?? null)
    }),
  }
}
