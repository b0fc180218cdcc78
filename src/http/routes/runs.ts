import type { OpenAPIHono } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { streamSSE } from 'hono/streaming'
import {
  getV1AgentsAgentIdRunsRoute,
  getV1RunsRunIdRoute,
  getV1RunsRunIdTraceRoute,
  getV1RunsRunIdTraceStreamRoute,
  postV1AgentsAgentIdRunsRoute,
  postV1RunsRunIdCancelRoute,
  postV1RunsRunIdPauseRoute,
  postV1RunsRunIdResumeRoute,
  postV1RunsRunIdStepsStepIdApprovalRoute,
} from '../../../generated/routes.js'
import { ApiError } from '../../domain/errors.js'
import { decodeCursor } from '../../domain/pagination.js'
import type { ControlAction, RunService } from '../../domain/runs/service.js'
import { callerOf } from '../../surface/caller.js'
import type { AppEnv } from '../../surface/context.js'
import { runsOfAgentPage, tracePage } from '../../surface/pages.js'
import { presentFrame, presentRun, traceList } from '../../surface/presenters.js'
import { routeInput } from '../../surface/route-input.js'
import { requireScopeOf } from '../../surface/scopes.js'
import { jsonAnswer } from '../json.js'
import { TRACE_POLL_MS, type TraceRunPorts, traceSource, writeTrace } from '../trace-sse.js'

const RUN_PATH = '/v1/runs/:run_id'
const TRACE_PATH = '/v1/runs/:run_id/trace'
const TRACE_STREAM_PATH = '/v1/runs/:run_id/trace/stream'

/** What the run routes call; the SSE trace also waits on the run's changes (`TraceRunPorts`). */
export interface RunRoutePorts {
  runs: Pick<
    RunService,
    'start' | 'listByAgent' | 'get' | 'getNow' | 'control' | 'decide' | 'find' | 'frames'
  > &
    TraceRunPorts
}

export function registerRunRoutes(
  app: OpenAPIHono<AppEnv>,
  services: RunRoutePorts,
  tracePollMs: number = TRACE_POLL_MS,
): void {
  app.openapi(postV1AgentsAgentIdRunsRoute, async (c) => {
    const auth = requireScopeOf(c, 'startRun')
    const { agent_id } = c.req.valid('param')
    const view = await services.runs.start(auth.workspaceId, agent_id, c.req.valid('json'), callerOf(auth))
    return c.json(presentRun(view), 201)
  })

  app.openapi(getV1AgentsAgentIdRunsRoute, async (c) => {
    const auth = requireScopeOf(c, 'listAgentRuns')
    const agentId = c.req.valid('param').agent_id
    return c.json(await runsOfAgentPage(services.runs, auth.workspaceId, agentId, c.req.valid('query')), 200)
  })

  // The hottest read, checked against its contract route here rather than by @hono/zod-openapi's validator layer
  // (an async middleware layer with an async parse and an async hook): the same schema, the same 400, before the
  // scope check as there; one layer and its promise hops fewer per request.
  app.get(RUN_PATH, async (c) => {
    const { param } = routeInput(c, getV1RunsRunIdRoute)
    const auth = requireScopeOf(c, 'getRun')
    const view =
      services.runs.getNow(auth.workspaceId, param.run_id) ??
      (await services.runs.get(auth.workspaceId, param.run_id))
    return jsonAnswer(c, presentRun(view), 200)
  })

  const control = (action: ControlAction) => async (c: Context<AppEnv>) => {
    const auth = requireScopeOf(c, `${action}Run`)
    const view = await services.runs.control(
      auth.workspaceId,
      c.req.param('run_id') ?? '',
      action,
      auth.identity,
    )
    return c.json(presentRun(view), 200)
  }
  app.openapi(postV1RunsRunIdPauseRoute, control('pause'))
  app.openapi(postV1RunsRunIdResumeRoute, control('resume'))
  app.openapi(postV1RunsRunIdCancelRoute, control('cancel'))

  app.openapi(postV1RunsRunIdStepsStepIdApprovalRoute, async (c) => {
    const auth = requireScopeOf(c, 'decideApproval')
    const { run_id, step_id } = c.req.valid('param')
    const body = c.req.valid('json')
    const view = await services.runs.decide(
      auth.workspaceId,
      run_id,
      step_id,
      body.decision,
      auth.identity,
      body.comment,
    )
    return c.json(presentRun(view), 200)
  })

  // The SSE forms of the trace: the contract's own operation (`/trace/stream`), and the paging path asked for
  // `text/event-stream` (what earlier versions of the contract documented), answered ahead of the JSON-only route.
  // Neither is a typed route: a stream is not a JSON body.
  const openTraceStream = async (c: Context<AppEnv>) => {
    // Not a typed route: its input is checked against the contract's operation here, as a typed route's would be.
    const { param, query, header } = routeInput(c, getV1RunsRunIdTraceStreamRoute)
    const auth = requireScopeOf(c, 'streamRunTrace')
    const runId = param.run_id
    const after = resumeAfter(auth.workspaceId, runId, query.cursor, header['Last-Event-ID'])
    await services.runs.find(auth.workspaceId, runId) // 404 before the stream opens
    const source = traceSource(services.runs, auth.workspaceId, runId)
    return streamSSE(c, (stream) => writeTrace(stream, source, after, presentFrame, tracePollMs))
  }
  app.get(TRACE_STREAM_PATH, openTraceStream)
  app.use(TRACE_PATH, async (c, next) => {
    if (c.req.method !== 'GET' || !(c.req.header('accept') ?? '').includes('text/event-stream')) return next()
    return openTraceStream(c)
  })

  app.openapi(getV1RunsRunIdTraceRoute, async (c) => {
    const auth = requireScopeOf(c, 'getRunTrace')
    const runId = c.req.valid('param').run_id
    return c.json(await tracePage(services.runs, auth.workspaceId, runId, c.req.valid('query')), 200)
  })
}

/** Where an SSE client resumes: after `Last-Event-ID` when it sent one (a reconnect), else after `cursor`. */
function resumeAfter(
  workspaceId: string,
  runId: string,
  cursor: string | undefined,
  lastEventId: string | undefined,
): number {
  // Last-Event-ID is the frame seq of this run's own trace (no other tenant's figure): it stays a plain number. The
  // contract allows digits only; a figure past any seq (beyond 2^53) is refused rather than rounded.
  if (lastEventId === undefined || lastEventId === '')
    return decodeCursor(workspaceId, traceList(runId), cursor)
  const seq = Number(lastEventId)
  if (!Number.isSafeInteger(seq)) {
    throw new ApiError('invalid_request', 'Last-Event-ID must be a frame seq', {
      issues: [{ location: 'header', path: 'Last-Event-ID', message: 'must be a non-negative integer' }],
      fields: ['Last-Event-ID'],
    })
  }
  return seq
}
