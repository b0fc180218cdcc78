/**
 * Mutants for what the reference profile makes of a run's start (its plan, its envelope, a task's run) and of an
 * agent's deletion (conformance/src/checks/runplans.ts).
 */
import { editJson, type Json, type Mutant, type ProxiedRequest, parseJson, pathOnly } from '../proxy.js'

const RUN = /^\/v1\/runs\/[^/]+$/
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
