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
import { decodeCursor, encodeCursor, pageRequest, toPage } from '../../domain/pagination.js'
import type { ControlAction } from '../../domain/runs/service.js'
import { isTerminal } from '../../domain/runs/state-machine.js'
import type { Services } from '../../services.js'
import type { AppEnv } from '../context.js'
import { presentFrame, presentRun, TRACE_LIST } from '../presenters.js'
import { callerOf, requireScope } from '../scopes.js'

const SSE_PAGE = 200
const SSE_KEEPALIVE_MS = 15_000

export function registerRunRoutes(app: OpenAPIHono<AppEnv>, services: Services): void {
  app.openapi(postV1AgentsAgentIdRunsRoute, async (c) => {
    const auth = requireScope(c, 'runs:write')
    const view = await services.runs.start(
      auth.workspaceId,
      c.req.valid('param').agent_id,
      c.req.valid('json'),
      callerOf(auth),
    )
    return c.json(presentRun(view), 201)
  })

  app.openapi(getV1AgentsAgentIdRunsRoute, async (c) => {
    const auth = requireScope(c, 'runs:read')
    const page = pageRequest('runs', c.req.valid('query'))
    const views = await services.runs.listByAgent(
      auth.workspaceId,
      c.req.valid('param').agent_id,
      page.afterSeq,
      page.limit + 1,
    )
    const rows = views.map((v) => ({ ...v, seq: v.run.seq }))
    return c.json(toPage('runs', rows, page.limit, presentRun), 200)
  })

  app.openapi(getV1RunsRunIdRoute, async (c) => {
    const auth = requireScope(c, 'runs:read')
    return c.json(presentRun(await services.runs.get(auth.workspaceId, c.req.valid('param').run_id)), 200)
  })

  const control = (action: ControlAction) => async (c: Context<AppEnv>) => {
    const auth = requireScope(c, 'runs:write')
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
    const auth = requireScope(c, 'runs:approve')
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

  // The SSE operation of the contract, and the older `Accept: text/event-stream` form of the paging path.
  async function openTraceStream(c: Context<AppEnv>, workspaceId: string, runId: string, cursor?: string) {
    const lastEventId = c.req.header('last-event-id')
    let after = decodeCursor(TRACE_LIST, cursor)
    if (lastEventId !== undefined && lastEventId !== '') {
      if (!/^\d{1,15}$/.test(lastEventId)) {
        throw new ApiError('invalid_request', 'Last-Event-ID must be a frame seq', {
          issues: [{ path: 'Last-Event-ID', message: 'must be a non-negative integer' }],
          fields: ['Last-Event-ID'],
        })
      }
      after = Number(lastEventId)
    }
    await services.runs.find(workspaceId, runId) // 404 before the stream opens
    return streamTrace(c, services, workspaceId, runId, after) as unknown as Response & { _data: never }
  }

  app.openapi(getV1RunsRunIdTraceStreamRoute, async (c) => {
    const auth = requireScope(c, 'runs:read')
    const { run_id } = c.req.valid('param')
    return openTraceStream(
      c as unknown as Context<AppEnv>,
      auth.workspaceId,
      run_id,
      c.req.valid('query').cursor,
    )
  })

  // Earlier versions of the contract streamed the paging path on `Accept: text/event-stream`; it still does, ahead
  // of the typed (JSON-only) route.
  app.get('/v1/runs/:run_id/trace', async (c, next) => {
    if (!(c.req.header('accept') ?? '').includes('text/event-stream')) return next()
    const auth = requireScope(c, 'runs:read')
    return openTraceStream(c, auth.workspaceId, c.req.param('run_id'), c.req.query('cursor'))
  })

  app.openapi(getV1RunsRunIdTraceRoute, async (c) => {
    const auth = requireScope(c, 'runs:read')
    const runId = c.req.valid('param').run_id
    const query = c.req.valid('query')
    const page = pageRequest(TRACE_LIST, query)
    const { run, frames } = await services.runs.frames(auth.workspaceId, runId, page.afterSeq, page.limit + 1)
    const more = frames.length > page.limit
    const data = frames.slice(0, page.limit)
    const last = data.at(-1)?.seq ?? page.afterSeq
    // A live run always gets a cursor to poll from; a finished one gets null once nothing follows.
    const nextCursor = more || !isTerminal(run.status) ? encodeCursor(TRACE_LIST, last) : null
    return c.json({ data: data.map(presentFrame), next_cursor: nextCursor, run_status: run.status }, 200)
  })
}

/**
 * Server-Sent Events: every frame after `after` as `id: <seq>` / `event: frame`, live until the run is terminal,
 * then `event: end`. It reads the same table in the same order as paging, so both give the same frames.
 */
function streamTrace(
  c: Context<AppEnv>,
  services: Services,
  workspaceId: string,
  runId: string,
  after: number,
) {
  return streamSSE(c, async (stream) => {
    let wake: (() => void) | undefined
    const unsubscribe = services.runs.onChange((id) => {
      if (id === runId) wake?.()
    })
    let closed = false
    stream.onAbort(() => {
      closed = true
      wake?.()
    })
    try {
      let cursor = after
      let lastWrite = Date.now()
      while (!closed) {
        const { run, frames } = await services.runs.frames(workspaceId, runId, cursor, SSE_PAGE)
        for (const f of frames) {
          await stream.writeSSE({ id: String(f.seq), event: 'frame', data: JSON.stringify(presentFrame(f)) })
          cursor = f.seq
          lastWrite = Date.now()
        }
        if (frames.length === SSE_PAGE) continue
        if (isTerminal(run.status)) {
          await stream.writeSSE({
            event: 'end',
            data: JSON.stringify({ run_status: run.status, last_seq: cursor }),
          })
          break
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 1000)
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        wake = undefined
        if (Date.now() - lastWrite >= SSE_KEEPALIVE_MS) {
          await stream.write(': keep-alive\n\n')
          lastWrite = Date.now()
        }
      }
    } finally {
      unsubscribe()
    }
  })
}
