import type { ListedAgentView } from '../domain/agents/service.js'
import type { IngestionService } from '../domain/ingestion/service.js'
import { encodeCursor, type Page, pageRequest, type Slice, toPage } from '../domain/pagination.js'
import type { RunService } from '../domain/runs/service.js'
import type { ToolService } from '../domain/tools/service.js'
import type { DeliveryRecord } from '../domain/webhooks/types.js'
import type { AgentBody, RecordPageBody, RunPageBody, ToolPageBody, TracePageBody } from './contract-types.js'
import {
  presentAgent,
  presentDelivery,
  presentFrame,
  presentRun,
  presentTool,
  presentWebhook,
  traceList,
} from './presenters.js'

/** A page request as the transports read it: a cursor from a previous page and a size, both optional. */
export interface PageQuery {
  cursor?: string | undefined
  limit?: number | undefined
}

/** Reads the page a query asks for from one list and presents its rows. */
async function listPage<R extends { seq: number }, T>(
  workspaceId: string,
  list: string,
  query: PageQuery,
  read: (afterSeq: number, limit: number) => Promise<Slice<R>>,
  present: (row: R) => T,
): Promise<Page<T>> {
  const page = pageRequest(workspaceId, list, query)
  return toPage(workspaceId, list, await read(page.afterSeq, page.limit), present)
}

/**
 * A list of the workspace that its service reads as `list(workspaceId, after, limit)`, under one cursor list name:
 * agents, webhook subscriptions and destinations.
 */
export function workspaceList<R extends { seq: number }, T>(list: string, present: (row: R) => T) {
  return (
    service: { list(workspaceId: string, after: number, limit: number): Promise<Slice<R>> },
    workspaceId: string,
    query: PageQuery,
  ): Promise<Page<T>> =>
    listPage(workspaceId, list, query, (after, limit) => service.list(workspaceId, after, limit), present)
}

export const agentsPage = workspaceList<ListedAgentView, AgentBody>('agents', presentAgent)

/** Active tools, or all of them with `includeRetired`: two lists, so paging cannot switch filters halfway. */
export function toolsPage(
  tools: Pick<ToolService, 'list'>,
  workspaceId: string,
  includeRetired: boolean,
  query: PageQuery,
): Promise<ToolPageBody> {
  const read = (after: number, limit: number) => tools.list(workspaceId, includeRetired, after, limit)
  return listPage(workspaceId, includeRetired ? 'tools:all' : 'tools', query, read, presentTool)
}

export const webhooksPage = workspaceList('webhooks', presentWebhook)

/** A delivery channel's service as its delivery log reads it: a webhook subscription's or a destination's. */
interface DeliveryLogSource {
  listDeliveries(
    workspaceId: string,
    channelId: string,
    after: number,
    limit: number,
  ): Promise<Slice<DeliveryRecord>>
}

/**
 * One delivery channel's log, for each channel kind under its own cursor list name (`<list>:<channel id>`), so a
 * cursor cannot page another channel's log, nor another kind's.
 */
export function deliveryLog<T>(list: string, present: (delivery: DeliveryRecord) => T) {
  return (
    service: DeliveryLogSource,
    workspaceId: string,
    channelId: string,
    query: PageQuery,
  ): Promise<Page<T>> => {
    const read = (after: number, limit: number) =>
      service.listDeliveries(workspaceId, channelId, after, limit)
    return listPage(workspaceId, `${list}:${channelId}`, query, read, present)
  }
}

/** One subscription's delivery log. */
export const deliveriesPage = deliveryLog('deliveries', presentDelivery)

/** One connector's records with their proofs; the cursor names the connector. */
export function recordsPage(
  ingestion: Pick<IngestionService, 'list'>,
  workspaceId: string,
  connectorId: string,
  query: PageQuery,
): Promise<RecordPageBody> {
  const read = (after: number, limit: number) => ingestion.list(workspaceId, connectorId, after, limit)
  return listPage(workspaceId, `records:${connectorId}`, query, read, (r) => r)
}

/** One agent's runs, under the `runs` cursor list. */
export function runsOfAgentPage(
  runs: Pick<RunService, 'listByAgent'>,
  workspaceId: string,
  agentId: string,
  query: PageQuery,
): Promise<RunPageBody> {
  const read = async (after: number, limit: number) => {
    const views = await runs.listByAgent(workspaceId, agentId, after, limit)
    return { ...views, rows: views.rows.map((v) => ({ ...v, seq: v.run.seq })) }
  }
  return listPage(workspaceId, 'runs', query, read, presentRun)
}

/** One run's trace frames; the paging rule (a live run always gets a cursor to poll from) is RunService.frames'. */
export async function tracePage(
  runs: Pick<RunService, 'frames'>,
  workspaceId: string,
  runId: string,
  query: PageQuery,
): Promise<TracePageBody> {
  const list = traceList(runId)
  const page = pageRequest(workspaceId, list, query)
  const read = await runs.frames(workspaceId, runId, page.afterSeq, page.limit)
  return {
    data: read.frames.map(presentFrame),
    next_cursor: read.nextAfter === null ? null : encodeCursor(workspaceId, list, read.nextAfter),
    run_status: read.status,
  }
}
