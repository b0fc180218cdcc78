import DataLoader from 'dataloader'
import type { AgentView } from '../domain/agents/service.js'
import type { AuthContext } from '../surface/caller.js'
import { MAX_REPLAY } from '../surface/topic-sources.js'
import type { GraphqlPorts, LoaderPorts } from './ports.js'

/** Everything a resolver may use: the caller, the ports GraphQL calls, and per-request batch loaders. */
export interface GraphqlContext {
  ports: GraphqlPorts
  auth: AuthContext
  requestId: string
  /** Agents by id, loaded together per tick: a page of runs with their agents costs a constant number of queries. */
  agents: DataLoader<string, AgentView | null>
  /** Most messages a subscription's `since` replays before a `gap` (the stream's window, AGENTOPS_STREAM_MAX_REPLAY). */
  replayWindow: number
}

export function createContext(
  ports: GraphqlPorts,
  auth: AuthContext,
  requestId: string,
  replayWindow = MAX_REPLAY,
): GraphqlContext {
  return { ports, auth, requestId, agents: agentLoader(ports, auth.workspaceId), replayWindow }
}

function agentLoader(ports: LoaderPorts, workspaceId: string): DataLoader<string, AgentView | null> {
  return new DataLoader(async (ids) => {
    const found = await ports.agents.getMany(workspaceId, ids)
    return ids.map((id) => found.get(id) ?? null)
  })
}
