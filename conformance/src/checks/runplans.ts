/**
 * What the reference profile makes of a run's start beyond the fields §2 shows: how its plan is chosen, the
 * envelope it is started under, the values a start without `mode` or `trace_level` gets, the run a task starts and
 * what deleting an agent does to its runs. The spec leaves each open (§2 "inputs | object | Free-form input values
 * for the agent", "Allowed values of `mode` and `trace_level` beyond the two named: not shown"; §4 "DELETE
 * /v1/agents/{id} | Terminates and deletes the agent"), so the checks are profile.
 */
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { eventOf, fieldOf, oneOfEachEvent } from '../delivery-body.js'
import { decideStep, expectStatus, type Json, missingIdLike, ownId, pageItems } from '../fixtures.js'
import { obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import { assert, fail } from '../types.js'
import { short, sleep } from '../wait.js'
import { expectError } from './assertions.js'
import { deliveryTrail, ownHook } from './webhooks.js'

/** An agent with the reference's own create body (capabilities name tools); deleted at the end. */
async function referenceAgent(ctx: CheckContext, capabilities: string[], behavior = 'autonomous') {
  const res = await ctx.http.post('/v1/agents', { name: ctx.name('agent'), behavior, capabilities })
  expectStatus(res, 201, 'creating an agent')
  const id = ownId(res.body, 'agent')
  if (!id) fail(`agent creation answered no agent_id: ${short(res.body)}`)
  ctx.cleanup(`delete agent ${id}`, (http) => http.delete(`/v1/agents/${id}`))
  return id
}

/** The 400 of a refused start: invalid_request naming `field` in detail.fields and its issues' paths. */
function refusedField(res: Parameters<typeof expectError>[0], field: string, what: string): Json {
  const detail = obj(expectError(res, 400, what, 'invalid_request').detail)
  const issues = Array.isArray(detail.issues) ? detail.issues.map(obj) : []
  assert(
    sameJson(detail.fields, [field]) &&
      issues.length === 1 &&
      issues[0]?.path === field &&
      typeof issues[0]?.message === 'string' &&
      issues[0]?.message !== '',
    `${what}: detail ${short(detail)} does not name ${field} in fields and its one issue`,
  )
  return detail
}

/** The tool.call frames of a run once it ended: [step_id, tool] of each, in trace order. */
async function calls(ctx: CheckContext, runId: string): Promise<{ status: unknown; calls: Json[] }> {
  const final = await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.terminal(s), 'ended')
  const { frames } = await ctx.fx.readTrace(runId)
  return { status: final.status, calls: frames.filter((f) => f.kind === 'tool.call') }
}

export const runPlanChecks: Check[] = [
  {
    id: 'runs.plan-choice',
    title:
      'A run’s plan is inputs.plan (tool names, in order, repeats kept) or else its agent’s capabilities that name active tools; a malformed or unknown plan, an unknown envelope answer 400, a plan over the envelope’s max_steps 403; a start without mode or trace_level reads back live and summary with its inputs',
    level: 'profile',
    clauses: ['S2.5', 'S1.4'],
    // Mostly waiting for its runs, of an agent of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx) {
      const [a, b] = [await ctx.fx.tool('succeed'), await ctx.fx.newTool('succeed')]
      const agent = await referenceAgent(ctx, [`${ctx.name('no-such-tool')}`, a.name])
      const start = (body: Json) => ctx.http.post(`/v1/agents/${agent}/runs`, body)

      // From the capabilities: the one that names no tool is left out. Without mode and trace_level.
      const inputs = { period: '2026-Q3', scope: ['conformance'] }
      const fromCaps = await start({ inputs })
      expectStatus(fromCaps, 201, 'starting a run without mode and trace_level')
      const capsId = String(obj(fromCaps.body).run_id)
      const capsRun = await ctx.fx.inspect(capsId)
      assert(
        capsRun.mode === 'live' && capsRun.trace_level === 'summary',
        `a start without mode and trace_level reads back mode ${short(capsRun.mode)}, trace_level ${short(capsRun.trace_level)}`,
      )
      assert(
        sameJson(capsRun.inputs, inputs),
        `the run's inputs read back as ${short(capsRun.inputs)}, not ${short(inputs)}`,
      )
      assert(
        obj(capsRun.plan).steps_total === 1,
        `an agent with capabilities [an unknown name, ${a.name}] planned ${short(capsRun.plan)}, not one step`,
      )
      const capsCalls = await calls(ctx, capsId)
      assert(
        ctx.fx.statuses.is(capsCalls.status, 'succeeded') &&
          sameJson(
            capsCalls.calls.map((c) => [c.step_id, c.tool]),
            [['step_1', a.name]],
          ),
        `the capability run ended ${short(capsCalls.status)} with calls ${short(capsCalls.calls)}`,
      )
      // Read once the run ended: a queued run has no run.started frame yet.
      const started = (await ctx.fx.readTrace(capsId)).frames.find((f) => f.kind === 'run.started')
      const startedDetail = obj(started?.detail)
      assert(
        startedDetail.envelope === 'default' &&
          sameJson(startedDetail.plan, [{ step_id: 'step_1', tool: a.name, tool_id: a.id }]),
        `the run.started frame's detail is ${short(startedDetail)}, not the plan and the envelope`,
      )

      // From inputs.plan: in order, repeats kept; its tools get the other inputs, never the plan.
      const planned = await start({
        inputs: { plan: [b.name, a.name, b.name], note: 'n' },
        mode: 'dry_run',
        trace_level: 'detailed',
      })
      expectStatus(planned, 201, 'starting a run with inputs.plan')
      const plannedCalls = await calls(ctx, String(obj(planned.body).run_id))
      assert(
        ctx.fx.statuses.is(plannedCalls.status, 'succeeded') &&
          sameJson(
            plannedCalls.calls.map((c) => [c.step_id, c.tool]),
            [
              ['step_1', b.name],
              ['step_2', a.name],
              ['step_3', b.name],
            ],
          ),
        `a run planned [${b.name}, ${a.name}, ${b.name}] ended ${short(plannedCalls.status)} with calls ${short(plannedCalls.calls)}`,
      )
      assert(
        plannedCalls.calls.every((c) => c.result === `dry_run:${String(c.step_id)}`),
        `a dry run's calls answered results ${short(plannedCalls.calls.map((c) => c.result))}, not dry_run:<step_id>`,
      )
      assert(
        plannedCalls.calls.every((c) => sameJson(obj(c.detail).input, { note: 'n' })),
        `the planned run's detailed calls got ${short(plannedCalls.calls.map((c) => obj(c.detail).input))}, not the inputs without the plan`,
      )

      // Both runs are listed as the agent's; an agent that does not exist has no list (404).
      const listed = await ctx.http.get(`/v1/agents/${agent}/runs`)
      expectStatus(listed, 200, 'GET /v1/agents/{id}/runs')
      const ids = (pageItems(listed.body) ?? []).map((r) => obj(r).run_id)
      assert(
        ids.includes(capsId) && ids.includes(obj(planned.body).run_id),
        `the agent's runs list ${short(ids)}, not both of its runs`,
      )
      expectError(
        await ctx.http.get(`/v1/agents/${missingIdLike(agent)}/runs`),
        404,
        'listing the runs of an agent that does not exist',
        'not_found',
      )

      // Refusals.
      refusedField(await start({ inputs: { plan: a.name } }), 'inputs.plan', 'inputs.plan that is a string')
      // A plan that is not all names is malformed: refused as such, not as a plan of tools that do not exist.
      const malformed = refusedField(
        await start({ inputs: { plan: [a.name, 7] } }),
        'inputs.plan',
        'inputs.plan with a number',
      )
      assert(
        malformed.unknown_tools === undefined,
        `the refusal of a plan with a number names unknown_tools ${short(malformed.unknown_tools)}, as if 7 were a tool's name`,
      )
      const unknownName = ctx.name('no-such-tool')
      const unknownRes = await start({ inputs: { plan: [a.name, unknownName] } })
      const unknown = refusedField(unknownRes, 'inputs.plan', 'inputs.plan naming a tool that does not exist')
      assert(
        sameJson(unknown.unknown_tools, [unknownName]),
        `the refusal names unknown_tools ${short(unknown.unknown_tools)}, not [${unknownName}]`,
      )
      const unknownMessage = String(obj(obj(unknownRes.body).error).message)
      assert(
        unknownMessage.includes(unknownName),
        `the refusal of a plan naming ${unknownName} says "${unknownMessage}", which does not name it`,
      )
      refusedField(
        await start({ inputs, policy_envelope: 'no-such-envelope' }),
        'policy_envelope',
        'an unknown policy_envelope',
      )

      // The restricted envelope allows 10 steps per run: 10 start, 11 are refused before the run exists.
      const steps = (n: number) => ({
        inputs: { plan: Array.from({ length: n }, () => a.name) },
        mode: 'dry_run',
        policy_envelope: 'restricted',
      })
      const ten = await start(steps(10))
      expectStatus(ten, 201, 'a run of 10 steps under the restricted envelope (max_steps 10)')
      await ctx.http.post(`/v1/runs/${String(obj(ten.body).run_id)}/cancel`)
      const denied = obj(
        expectError(
          await start(steps(11)),
          403,
          'a run of 11 steps under the restricted envelope',
          'policy_denied',
        ).detail,
      )
      assert(
        denied.envelope === 'restricted' &&
          denied.violation === 'max_steps' &&
          denied.observed === 11 &&
          denied.limit === 10 &&
          denied.escalation_queue === 'security-review',
        `the max_steps refusal's detail is ${short(denied)}`,
      )
    },
  },
  {
    id: 'runs.task-run-inputs',
    title:
      'The run a task starts carries the task: inputs.task is its description, inputs.data_source its data_source (absent when the task has none), and task_id and priority; the task reads back its run’s final status and outcome, and its run’s end is announced once as task.<status> (task_id, run_id, agent_id, status), a cancel during a call included; a run without a task announces no task event',
    level: 'profile',
    clauses: ['S2.9', 'S1.8'],
    // Waits for deliveries on the deployment's clock: alongside the checks after it.
    overlap: true,
    async run(ctx) {
      // §6 "Any other event kinds: not shown": task.succeeded, task.failed and task.cancelled are the reference's.
      const { mine } = await subscribe(ctx, ['task.succeeded', 'task.failed', 'task.cancelled'])
      // Events, not deliveries: one sent again under its id (at least once) is still one announcement.
      const taskEvents = (key: 'task_id' | 'run_id', id: string) =>
        oneOfEachEvent(
          ctx.receiver!.deliveries.filter(
            (d) => mine(d) && fieldOf(d, key) === id && String(eventOf(d)).startsWith('task.'),
          ),
        )
      const agent = await ctx.fx.agent()
      // A run no task started, ended before any task of this check's: it is announced by no task event.
      const taskless = (await ctx.fx.startRun(agent)).runId
      await ctx.fx.waitForStatus(taskless, (st) => ctx.fx.statuses.terminal(st), 'ended')
      const cancelled = cancelledTaskRun(ctx, mine)
      // Judged below, after the other task's run: a failure meanwhile is not an unhandled rejection.
      cancelled.catch(() => undefined)
      const assign = async (body: Json) => {
        const res = await ctx.http.post(`/v1/agents/${agent}/tasks`, body)
        expectStatus(res, 201, 'assigning a task')
        const taskId = ownId(res.body, 'task')
        const runId = obj(res.body).run_id
        if (typeof runId !== 'string') fail(`the task answer names no run_id: ${short(res.body)}`)
        return { taskId, run: await ctx.fx.inspect(runId) }
      }
      const description = ctx.name('task with data')
      const withData = await assign({ description, data_source: 's3://conformance/in.csv', priority: 4 })
      assert(
        sameJson(withData.run.inputs, { task: description, data_source: 's3://conformance/in.csv' }) &&
          withData.run.task_id === withData.taskId &&
          withData.run.priority === 4,
        `the task's run reads back inputs ${short(withData.run.inputs)}, task_id ${short(withData.run.task_id)}, priority ${short(withData.run.priority)}`,
      )
      const bare = ctx.name('task without data')
      const without = await assign({ description: bare })
      assert(
        sameJson(without.run.inputs, { task: bare }),
        `a task without data_source starts a run with inputs ${short(without.run.inputs)}`,
      )
      // The task follows its run: once the run ended, the task reads back its status and outcome.
      const runId = String(without.run.run_id)
      const final = await ctx.fx.waitForStatus(runId, (st) => ctx.fx.statuses.terminal(st), 'ended')
      const task = await ctx.http.get(`/v1/tasks/${String(without.taskId)}`)
      expectStatus(task, 200, 'GET /v1/tasks/{id}')
      const t = obj(task.body)
      assert(
        t.status === final.status && t.run_id === runId && sameJson(t.result, final.outcome),
        `the task reads back status ${short(t.status)}, result ${short(t.result)} after its run ended ${short(final.status)} with ${short(final.outcome)}`,
      )
      // The run's end is announced once, as the task's: task.<status> naming the task, its run and agent.
      const kind = `task.${String(final.status)}`
      const ended = await ctx.receiver!.waitFor(
        (d) => mine(d) && fieldOf(d, 'task_id') === without.taskId && eventOf(d) === kind,
        ctx.config.waitMs,
      )
      const body = obj(ended?.body)
      assert(
        body.run_id === runId && body.agent_id === agent && body.status === final.status,
        ended
          ? `the ${kind} delivery of task ${String(without.taskId)} is ${short(body)}, not its run_id ${runId}, agent_id and status`
          : `no ${kind} delivery of task ${String(without.taskId)} within ${ctx.config.waitMs} ms after its run ended`,
      )
      const c = await cancelled
      await sleep(500)
      const repeated = [...taskEvents('task_id', String(without.taskId)), ...taskEvents('task_id', c.taskId)]
      assert(
        c.found && repeated.length === 2,
        `a task's run end is announced ${short(repeated.map((d) => [fieldOf(d, 'task_id'), eventOf(d)]))}, not once per task (the task cancelled during its run's call: ${c.found ? 'announced' : `no ${c.kind} delivery`})`,
      )
      const stray = taskEvents('run_id', taskless)
      assert(
        stray.length === 0,
        `run ${taskless}, which no task started, was announced as a task's: ${short(stray.map((d) => d.body))}`,
      )
    },
  },
  {
    id: 'runs.agent-delete-cancels-runs',
    // It judges only its own agent's run, which mostly waits for a slot of the deployment's runner.
    overlap: true,
    title:
      'Deleting an agent cancels its live runs: a run awaiting approval reads back cancelled, its approval flushed, with the reason agent_deleted',
    level: 'profile',
    clauses: ['S4.13', 'S3.4'],
    async run(ctx) {
      const tool = await ctx.fx.tool('succeed')
      const agent = await referenceAgent(ctx, [tool.name], ctx.config.profile.approvalBehavior)
      const { runId } = await ctx.fx.startRun(agent)
      await ctx.fx.waitForStatus(runId, (s) => s === 'awaiting_approval', 'awaiting approval')
      expectStatus(await ctx.http.delete(`/v1/agents/${agent}`), 204, 'deleting the agent')
      const run = await ctx.fx.inspect(runId)
      const error = obj(obj(run.outcome).error)
      assert(
        ctx.fx.statuses.is(run.status, 'cancelled') &&
          Array.isArray(run.awaiting) &&
          run.awaiting.length === 0 &&
          error.code === 'agent_deleted' &&
          typeof error.message === 'string' &&
          error.message !== '',
        `the deleted agent's run reads back ${short(run.status)}, awaiting ${short(run.awaiting)}, outcome ${short(run.outcome)}`,
      )
      const { frames } = await ctx.fx.readTrace(runId)
      const cancelled = frames.find((f) => f.kind === 'control.cancelled')
      assert(
        frames.some((f) => f.kind === 'approval.flushed') &&
          obj(cancelled?.detail).reason === 'agent_deleted' &&
          obj(cancelled?.detail).by === 'system',
        `the trace of the deleted agent's run: ${short(frames.map((f) => [f.kind, f.detail]))}`,
      )
    },
  },
]

/** The deliveries to one subscription of this check's own (its receiver path ends in `tag`). */
function subscribe(ctx: CheckContext, events: string[], label = 'run-events') {
  return ownHook(ctx, label, events, { what: `subscribing to ${events.join(', ')}` })
}

/**
 * A task whose run is cancelled while its step's call runs (two 400 ms calls of the slow tool): the late answer is
 * dropped, and the run's end announced once. Answers the task and whether its task.<status> delivery came.
 */
async function cancelledTaskRun(
  ctx: CheckContext,
  mine: (d: Delivery) => boolean,
): Promise<{ taskId: string; kind: string; found: boolean }> {
  const slow = await ctx.fx.tool('slow')
  const agent = await referenceAgent(ctx, [slow.name, slow.name])
  const res = await ctx.http.post(`/v1/agents/${agent}/tasks`, { description: ctx.name('cancelled task') })
  expectStatus(res, 201, 'assigning a task')
  const taskId = String(ownId(res.body, 'task'))
  const runId = String(obj(res.body).run_id)
  await ctx.fx.waitForStatus(runId, (st) => st !== 'queued', 'started')
  await ctx.http.post(`/v1/runs/${runId}/cancel`)
  const final = await ctx.fx.waitForStatus(runId, (st) => ctx.fx.statuses.terminal(st), 'ended')
  // The call in flight at the cancel answers within its 400 ms: its late answer is recorded (dropped) meanwhile.
  await sleep(600)
  const kind = `task.${String(final.status)}`
  const found = await ctx.receiver!.waitFor(
    (d) => mine(d) && fieldOf(d, 'task_id') === taskId && eventOf(d) === kind,
    ctx.config.waitMs,
  )
  return { taskId, kind, found: found !== undefined }
}

export const runEventChecks: Check[] = [
  {
    id: 'runs.control-events',
    title:
      'Pause, resume, cancel, an approval and a rejection each announce the run’s new status: run.paused (paused_from), run.resumed (reason resumed or approved, the step), run.cancelled (the flushed approvals, the outcome) and run.failed (a rejection’s or a failed tool’s outcome); run.started names the plan’s steps, policy.denied the denied step, its tool and the decision’s detail; run.awaiting_approval previews the tool and its input, an input longer than 280 characters cut to 280',
    level: 'profile',
    clauses: ['S1.8', 'S6.3', 'S3.3', 'S3.4'],
    overlap: true,
    async run(ctx) {
      // Every run of the checks alongside starts: run.started has a subscription of its own, so the deployment's
      // queue of those (a subscription's deliveries may go one at a time) never holds up the control events'.
      const [started, control] = await Promise.all([
        subscribe(ctx, ['run.started'], 'run-started'),
        subscribe(ctx, [
          'policy.denied',
          'run.awaiting_approval',
          'run.paused',
          'run.resumed',
          'run.cancelled',
          'run.failed',
        ]),
      ])
      const tool = await ctx.fx.tool('succeed')
      const problems: string[] = []
      const delivered = async (runId: string, kind: string, want: Json) => {
        const hook = kind === 'run.started' ? started : control
        const found = await ctx.receiver!.waitFor(
          (d) => hook.mine(d) && fieldOf(d, 'run_id') === runId && eventOf(d) === kind,
          ctx.config.waitMs,
        )
        const body = found?.body
        if (!body) {
          problems.push(
            `no ${kind} delivery of run ${runId} within ${ctx.config.waitMs} ms (${await deliveryTrail(ctx, hook, kind)})`,
          )
          return
        }
        const wrong = Object.entries(want).filter(([k, v]) => !sameJson(body[k], v))
        if (wrong.length > 0)
          problems.push(
            `the ${kind} delivery of run ${runId} has ${wrong.map(([k]) => `${k} ${short(body[k])}`).join(', ')}, expected ${short(want)}`,
          )
        return body
      }
      await Promise.all([
        (async () => {
          const { runId, waiting } = await ctx.fx.awaitingRun()
          const step = String(obj((waiting.awaiting as unknown[])[0]).step_id)
          for (const action of ['pause', 'resume', 'cancel'])
            expectStatus(await ctx.http.post(`/v1/runs/${runId}/${action}`), 200, action)
          const final = await ctx.fx.inspect(runId)
          // The reviewer's preview: the tool and the input it would get.
          await delivered(runId, 'run.awaiting_approval', {
            payload_preview: { tool: tool.name, input: final.inputs, truncated: false },
          })
          await delivered(runId, 'run.paused', { status: 'paused', paused_from: 'awaiting_approval' })
          await delivered(runId, 'run.resumed', { status: 'awaiting_approval', reason: 'resumed' })
          await delivered(runId, 'run.cancelled', {
            status: 'cancelled',
            flushed_approvals: [step],
            outcome: final.outcome,
          })
        })(),
        (async () => {
          const { runId, waiting } = await ctx.fx.awaitingRun()
          const step = String(obj((waiting.awaiting as unknown[])[0]).step_id)
          expectStatus(await decideStep(ctx, runId, step, 'approve'), 200, 'approving')
          await delivered(runId, 'run.resumed', { status: 'running', reason: 'approved', step_id: step })
        })(),
        (async () => {
          // A long input is previewed cut to 280 characters of its JSON, marked truncated.
          const agent = await ctx.fx.newToolAgent([tool], ctx.config.profile.approvalBehavior)
          const long = { blob: 'x'.repeat(400) }
          const { runId } = await ctx.fx.startRun(agent, { inputs: long })
          const cut = `${JSON.stringify(long).slice(0, 277)}...`
          await delivered(runId, 'run.awaiting_approval', {
            payload_preview: { tool: tool.name, input: cut, truncated: true },
          })
          await ctx.http.post(`/v1/runs/${runId}/cancel`)
        })(),
        (async () => {
          // An input of exactly 280 characters of JSON is previewed whole.
          const agent = await ctx.fx.newToolAgent([tool], ctx.config.profile.approvalBehavior)
          const whole = { blob: 'x'.repeat(280 - JSON.stringify({ blob: '' }).length) }
          const { runId } = await ctx.fx.startRun(agent, { inputs: whole })
          await delivered(runId, 'run.awaiting_approval', {
            payload_preview: { tool: tool.name, input: whole, truncated: false },
          })
          await ctx.http.post(`/v1/runs/${runId}/cancel`)
        })(),
        (async () => {
          // A step whose tool fails fails the run: run.failed with the run's status and outcome; its start was
          // announced with the plan's steps.
          const agent = await ctx.fx.newToolAgent([await ctx.fx.tool('fail')])
          const { runId } = await ctx.fx.startRun(agent)
          const final = await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.terminal(s), 'ended')
          await delivered(runId, 'run.failed', { status: 'failed', outcome: final.outcome })
          const { frames } = await ctx.fx.readTrace(runId)
          const plan = obj(frames.find((f) => f.kind === 'run.started')?.detail).plan
          const steps = Array.isArray(plan) ? plan.map((p) => obj(p).step_id) : []
          await delivered(runId, 'run.started', { status: 'running', plan: steps })
        })(),
        (async () => {
          // A step the gate denies (the `restricted` envelope's fourth call) is announced as policy.denied naming
          // the step, its tool and the decision's detail; its step.failed frame gives the reason.
          const agent = await ctx.fx.newToolAgent([tool, tool, tool, tool])
          const { runId } = await ctx.fx.startRun(agent, { policy_envelope: 'restricted' })
          await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.terminal(s), 'ended')
          const { frames } = await ctx.fx.readTrace(runId)
          const deny = frames.find((f) => f.kind === 'policy.decision' && f.policy === 'deny')
          const { reason: _r, ...detail } = obj(deny?.detail)
          await delivered(runId, 'policy.denied', {
            step_id: deny?.step_id,
            tool: tool.name,
            tool_id: tool.id,
            detail,
          })
          const failed = frames.find((f) => f.kind === 'step.failed')
          if (typeof obj(failed?.detail).reason !== 'string' || obj(failed?.detail).reason === '')
            problems.push(`the denied step's step.failed frame gives no reason: ${short(failed)}`)
        })(),
        (async () => {
          const { runId, waiting } = await ctx.fx.awaitingRun()
          const step = String(obj((waiting.awaiting as unknown[])[0]).step_id)
          expectStatus(await decideStep(ctx, runId, step, 'reject'), 200, 'rejecting')
          const final = await ctx.fx.inspect(runId)
          await delivered(runId, 'run.failed', { status: 'failed', outcome: final.outcome })
        })(),
      ])
      assert(problems.length === 0, problems.join('; '))
    },
  },
]
