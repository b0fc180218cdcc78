/**
 * Mutants for what the reference profile makes of a run's start (its plan, its envelope, a task's run) and of an
 * agent's deletion (conformance/src/checks/runplans.ts).
 */
import { editJson, type Json, type Mutant, type ProxiedRequest, parseJson, pathOnly } from '../proxy.js'
import { dropFromDelivery, editListEntries } from '../rewrites.js'

const RUN = /^\/v1\/runs\/[^/]+$/
const TRACE_STREAM = /^\/v1\/runs\/[^/]+\/trace\/stream$/
const TRACE = /^\/v1\/runs\/[^/]+\/trace$/
const START = /^\/v1\/agents\/[^/]+\/runs$/

const isGetRun = (req: ProxiedRequest) => req.method === 'GET' && RUN.test(pathOnly(req.path))

export function runPlanMutants(): Mutant[] {
  return [
    {
      id: 'start-ignores-inputs-plan',
      description:
        'Run start drops inputs.plan: every run is planned from its agent’s capabilities, and a malformed plan is never refused',
      targets: ['runs.plan-choice'],
      request(req) {
        const body = req.method === 'POST' && START.test(pathOnly(req.path)) ? parseJson(req.body) : undefined
        if (!body) return req
        const inputs = body.inputs
        if (!inputs || typeof inputs !== 'object' || !('plan' in inputs)) return req
        const { plan: _plan, ...rest } = inputs as Json
        return { ...req, body: JSON.stringify({ ...body, inputs: rest }) }
      },
    },
    {
      id: 'task-run-without-data-source',
      description: 'The run a task starts is not given the task’s data_source',
      targets: ['runs.task-run-inputs'],
      response(req, res) {
        if (!isGetRun(req)) return res
        return editJson(res, (b) => {
          const inputs = b.inputs as Json | undefined
          if (b.task_id === null || !inputs || !('data_source' in inputs)) return undefined
          const { data_source: _d, ...rest } = inputs
          return { ...b, inputs: rest }
        })
      },
    },
    {
      id: 'agent-delete-leaves-runs-waiting',
      description: 'Deleting an agent leaves its runs awaiting approval instead of cancelling them',
      targets: ['runs.agent-delete-cancels-runs'],
      response(req, res) {
        if (!isGetRun(req)) return res
        return editJson(res, (b) => {
          const error = (b.outcome as Json | null)?.error as Json | null | undefined
          if (error?.code !== 'agent_deleted') return undefined
          return { ...b, status: 'awaiting_approval', outcome: null }
        })
      },
    },
    {
      id: 'task-end-announced-without-status',
      description: 'The task.<status> delivery announcing a task’s run end lacks the status it ended with',
      targets: ['runs.task-run-inputs'],
      delivery: dropFromDelivery((body) => String(body.event).startsWith('task.'), 'status'),
    },
    {
      id: 'failed-step-left-pending',
      description:
        'A step whose tool failed is not counted completed: the failed run’s plan leaves it pending',
      targets: ['runs.trace-levels-and-outcomes'],
      response(req, res) {
        if (!isGetRun(req)) return res
        return editJson(res, (b) => {
          const error = (b.outcome as Json | null)?.error as Json | null | undefined
          const plan = b.plan as Json | undefined
          if (error?.code !== 'tool_failed' || !plan || typeof plan.steps_completed !== 'number')
            return undefined
          const completed = plan.steps_completed - 1
          return {
            ...b,
            plan: { ...plan, steps_completed: completed, steps_pending: Number(plan.steps_pending) + 1 },
          }
        })
      },
    },
    {
      id: 'trace-stream-frames-on-a-poll',
      description:
        'The SSE trace sends a live run’s new frames on a 1 s poll (as the reference’s fallback read would alone), not when they are written',
      targets: ['runs.trace-pushed-promptly'],
      ssePoll: { periodMs: 1000 },
    },
    {
      id: 'trace-stream-keep-alive-every-poll',
      description:
        'The SSE trace writes a keep-alive comment after every wait, also between frames a second apart',
      targets: ['runs.trace-streaming'],
      response(req, res) {
        const sse = (res.headers['content-type'] ?? '').startsWith('text/event-stream')
        if (req.method !== 'GET' || !TRACE_STREAM.test(pathOnly(req.path)) || !sse) return res
        return { ...res, body: res.body.split('\n\n').join('\n\n: keep-alive\n\n') }
      },
    },
    {
      id: 'failed-run-outcome-says-succeeded',
      description: 'A run failed by its tool reads back an outcome whose status is succeeded',
      targets: ['runs.trace-levels-and-outcomes'],
      response(req, res) {
        if (!isGetRun(req)) return res
        return editJson(res, (b) => {
          const outcome = b.outcome as Json | null | undefined
          if ((outcome?.error as Json | null | undefined)?.code !== 'tool_failed') return undefined
          return { ...b, outcome: { ...outcome, status: 'succeeded' } }
        })
      },
    },
    {
      id: 'tool-failure-announced-without-outcome',
      description: 'The run.failed delivery of a run its tool failed carries no outcome',
      targets: ['runs.control-events'],
      delivery: dropFromDelivery((body) => {
        const error = (body.outcome as Json | null | undefined)?.error as Json | null | undefined
        return body.event === 'run.failed' && error?.code === 'tool_failed'
      }, 'outcome'),
    },
    {
      id: 'preview-cut-at-280',
      description: 'run.awaiting_approval cuts an input of exactly 280 characters of JSON, which fits',
      targets: ['runs.control-events'],
      delivery(req) {
        const body = parseJson(req.body)
        const preview = body?.payload_preview as Json | undefined
        const text = JSON.stringify(preview?.input)
        if (!body || !preview || preview.truncated !== false || text?.length !== 280) return req
        const cut = { ...preview, input: `${text.slice(0, 277)}...`, truncated: true }
        return { ...req, body: JSON.stringify({ ...body, payload_preview: cut }) }
      },
    },
    {
      id: 'retired-tool-failure-named-tool-failed',
      description:
        'A step whose tool was retired before it ran fails as if the tool had failed (tool_failed), not as unavailable',
      targets: ['runs.trace-levels-and-outcomes'],
      response(req, res) {
        if (!isGetRun(req)) return res
        return editJson(res, (b) => {
          const outcome = b.outcome as Json | null | undefined
          const error = outcome?.error as Json | null | undefined
          if (error?.code !== 'tool_unavailable') return undefined
          return { ...b, outcome: { ...outcome, error: { ...error, code: 'tool_failed' } } }
        })
      },
    },
    {
      id: 'call-latency-from-process-start',
      description: 'A tool call’s latency_ms is counted from the process’s start, not the call’s',
      targets: ['runs.trace-sequence'],
      response: editListEntries(TRACE, (f) =>
        f.kind === 'tool.call' ? { ...f, latency_ms: Number(f.latency_ms) + 60_000 } : f,
      ),
    },
    {
      id: 'run-start-announced-without-plan',
      description: 'The run.started delivery does not name the plan’s steps',
      targets: ['runs.control-events'],
      delivery: dropFromDelivery('run.started', 'plan'),
    },
    {
      id: 'policy-denied-delivery-without-detail',
      description: 'The policy.denied delivery of a denied step lacks the decision’s detail',
      targets: ['runs.control-events'],
      delivery: dropFromDelivery('policy.denied', 'detail'),
    },
    {
      id: 'retired-tool-step-without-reason',
      description: 'The step.failed frame of a step whose tool was retired gives no reason',
      targets: ['runs.trace-levels-and-outcomes'],
      response: editListEntries(TRACE, (f) =>
        f.kind === 'step.failed' && String((f.detail as Json | null)?.reason).includes('retired')
          ? { ...f, detail: {} }
          : f,
      ),
    },
    {
      id: 'approval-request-without-queue',
      description: 'The approval.requested frame does not name the queue and reason the step awaits in',
      targets: ['runs.trace-levels-and-outcomes'],
      response: editListEntries(TRACE, (f) => (f.kind === 'approval.requested' ? { ...f, detail: {} } : f)),
    },
    {
      id: 'control-events-without-status',
      description:
        'run.paused, run.resumed and run.cancelled deliveries carry the status the run had before the control, not after',
      targets: ['runs.control-events'],
      delivery(req) {
        const body = parseJson(req.body)
        if (!body) return req
        const before: Record<string, string> = {
          'run.paused': 'awaiting_approval',
          'run.resumed': 'paused',
          'run.cancelled': 'awaiting_approval',
        }
        const kind = String(body.event)
        if (!(kind in before)) return req
        return { ...req, body: JSON.stringify({ ...body, status: before[kind] }) }
      },
    },
  ]
}
