/** Spec §2, §3, §4 runs: start and inspection fields, controls, the trace. */
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import {
  decideStep,
  expectStatus,
  firstAwaitingStep,
  getTrace,
  listPage,
  nextPageCursor,
  runBody,
  streamedFrames,
} from '../fixtures.js'
import { obj } from '../http.js'
import { parseSse } from '../sse.js'
import { assert, fail, notApplicable } from '../types.js'
import { short, sleep } from '../wait.js'
import { decidesOtherThanAllow, expectError, isRfc3339 } from './assertions.js'

type Json = Record<string, unknown>

const PLAN_FIELDS = ['steps_total', 'steps_completed', 'steps_pending', 'steps_escalated'] as const

function isCount(v: unknown): boolean {
  return Number.isInteger(v) && (v as number) >= 0
}

/** A run over `steps` slow tools (three by default), paused right after start. */
async function pausedRun(ctx: CheckContext, steps = 3) {
  const agent = await ctx.fx.slowAgent(steps)
  const run = await ctx.fx.startRun(agent)
  const paused = await ctx.http.post(`/v1/runs/${run.runId}/pause`)
  expectStatus(paused, [200, 202, 204], 'pausing a running run')
  return { ...run, agent, paused }
}

/**
 * A run cancelled while its step's call runs (six calls of the slow tool, 400 ms each by the profile's hint, so a
 * cancel slowed by a loaded machine or a slow deployment still finds the run running; the cancel is sent as soon
 * as the run is running, and nothing after it runs): the cancel ends it, so the call's answer, coming after, is dropped:
 * the trace and the plan read a call's length later are those the cancel left. §3 "cancel: marks the run terminal";
 * whether a late answer is still recorded is the reference's choice (§3 "Transitions: not shown"). Answers what
 * differs, if anything.
 */
async function cancelledDuringCall(ctx: CheckContext): Promise<string | undefined> {
  const agent = await ctx.fx.slowAgent(6)
  const { runId } = await ctx.fx.startRun(agent)
  await ctx.fx.waitForStatus(runId, (s) => s !== 'queued', 'started')
  expectStatus(await ctx.http.post(`/v1/runs/${runId}/cancel`), 200, 'cancel during a call')
  const [trace, run] = [await ctx.fx.readTrace(runId), await ctx.fx.inspect(runId)]
  const slowMs = Number(ctx.config.profile.tools.slow.config?.delay_ms ?? 400)
  await sleep(slowMs + 400)
  const [later, again] = [await ctx.fx.readTrace(runId), await ctx.fx.inspect(runId)]
  const added = later.frames.slice(trace.frames.length)
  if (added.length > 0 || later.frames.length !== trace.frames.length)
    return `run ${runId}, cancelled during a call, had ${trace.frames.length} frames at its cancel and ${later.frames.length} ${slowMs + 400} ms later (added: ${short(added.map((f) => f.kind))})`
  if (!sameJson(again.plan, run.plan) || again.status !== run.status)
    return `run ${runId}, cancelled during a call, read ${short(run.status)} ${short(run.plan)} at its cancel and ${short(again.status)} ${short(again.plan)} ${slowMs + 400} ms later`
  return undefined
}

export const runChecks: Check[] = [
  {
    id: 'runs.start-201-fields',
    title:
      'Starting a run answers 201 with run_id, agent_id, status queued, policy_envelope, trace_url, created_at',
    level: 'core',
    clauses: ['S1.4', 'S2.1', 'S2.2', 'S2.5', 'S3.1', 'S4.3'],
    async run(ctx) {
      const { start, agentId } = await ctx.fx.completedRun()
      expectStatus(start, 201, 'POST /v1/agents/{agent_id}/runs')
      const b = obj(start.body)
      assert(typeof b.run_id === 'string' && b.run_id !== '', 'run_id is missing')
      assert(b.agent_id === agentId, `agent_id is ${short(b.agent_id)}, the agent was ${agentId}`)
      assert(b.status === 'queued', `status right after start is ${short(b.status)}, not queued`)
      assert(typeof b.policy_envelope === 'string' && b.policy_envelope !== '', 'policy_envelope is missing')
      assert(
        b.trace_url === `/v1/runs/${b.run_id}/trace`,
        `trace_url is ${short(b.trace_url)}, not /v1/runs/<run_id>/trace`,
      )
      assert(isRfc3339(b.created_at), `created_at is not RFC 3339: ${short(b.created_at)}`)
    },
  },
  {
    id: 'runs.inspect-200-fields',
    title:
      'Inspecting a run answers 200 with run_id, status, plan counts, awaiting, started_at, trace_cursor',
    level: 'core',
    clauses: ['S2.1', 'S2.3', 'S4.4'],
    async run(ctx) {
      const { runId } = await ctx.fx.completedRun()
      const res = await ctx.http.get(`/v1/runs/${runId}`)
      expectStatus(res, 200, 'GET /v1/runs/{run_id}')
      const b = obj(res.body)
      assert(b.run_id === runId, 'run_id differs')
      assert(typeof b.status === 'string', 'status is missing')
      const plan = obj(b.plan)
      for (const f of PLAN_FIELDS)
        assert(isCount(plan[f]), `plan.${f} is not a non-negative integer: ${short(b.plan)}`)
      assert(Array.isArray(b.awaiting), `awaiting is not an array: ${short(b.awaiting)}`)
      assert(isRfc3339(b.started_at), `started_at is not RFC 3339 on a run that ran: ${short(b.started_at)}`)
      assert(typeof b.trace_cursor === 'string', `trace_cursor is not a string: ${short(b.trace_cursor)}`)
    },
  },
  {
    id: 'runs.plan-counts',
    title:
      'Plan counts follow the trace: two succeeding steps give total 2, completed 2, pending 0, escalated 0 (and an outcome of status succeeded)',
    level: 'profile',
    clauses: ['S2.3'],
    async run(ctx) {
      const { final } = await ctx.fx.completedRun()
      assert(
        ctx.fx.statuses.is(final.status, 'succeeded'),
        `the run ended ${short(final.status)}: ${short(final.outcome)}`,
      )
      // The outcome's status is the run's (the reference's outcome fields; §2 "Run outcome fields: not shown").
      assert(
        obj(final.outcome).status === 'succeeded',
        `the succeeded run's outcome has status ${short(obj(final.outcome).status)}`,
      )
      const plan = obj(final.plan)
      const want = { steps_total: 2, steps_completed: 2, steps_pending: 0, steps_escalated: 0 }
      for (const [k, v] of Object.entries(want))
        assert(plan[k] === v, `plan.${k} is ${short(plan[k])}, expected ${v}`)
      // Before its one step ran: a run awaiting approval of it has that step pending and escalated.
      const { waiting } = await ctx.fx.awaitingRun()
      const before = obj(waiting.plan)
      const pending = { steps_total: 1, steps_completed: 0, steps_pending: 1, steps_escalated: 1 }
      for (const [k, v] of Object.entries(pending))
        assert(before[k] === v, `plan.${k} of a run awaiting approval is ${short(before[k])}, expected ${v}`)
    },
  },
  {
    id: 'runs.awaiting-approval',
    title:
      'A run that needs approval reports status awaiting_approval and awaiting items {step_id, queue, reason}',
    level: 'core',
    clauses: ['S2.4', 'S3.2'],
    async run(ctx) {
      const { waiting } = await ctx.fx.awaitingRun()
      const awaiting = waiting.awaiting
      assert(
        Array.isArray(awaiting) && awaiting.length > 0,
        `awaiting is empty while awaiting_approval: ${short(waiting)}`,
      )
      for (const item of awaiting as Json[]) {
        for (const f of ['step_id', 'queue', 'reason'])
          assert(typeof item[f] === 'string', `awaiting item lacks ${f}: ${short(item)}`)
      }
      const plan = obj(waiting.plan)
      assert(
        Number(plan.steps_escalated) >= 1,
        `plan.steps_escalated is ${short(plan.steps_escalated)} while a step awaits approval`,
      )
    },
  },
  {
    id: 'runs.trace-lists-escalation',
    title:
      'A run awaiting approval lists the gate’s decision to hold each awaiting step in its trace: a frame of that step whose policy is a decision other than allow',
    level: 'core',
    clauses: ['S2.13', 'S2.6', 'S3.2'],
    async run(ctx) {
      // §2 "The trace lists every step, tool call, policy decision and approval in order", and a frame's `policy` is
      // the "Policy decision". A step that awaits approval was not allowed outright: the gate held it, and that
      // decision is listed on a frame of the step. Its value is the deployment's (§2 "Allowed values of trace `kind`
      // and `policy` beyond the two named: not shown"), but it is not `allow`. Frames written a moment after the
      // status are awaited within --wait-ms.
      const { runId, waiting } = await ctx.fx.awaitingRun()
      ctx.cleanup(`cancel run ${runId}`, (http) => http.post(`/v1/runs/${runId}/cancel`))
      const steps = (Array.isArray(waiting.awaiting) ? (waiting.awaiting as Json[]) : [])
        .map((a) => a.step_id)
        .filter((id): id is string => typeof id === 'string')
      assert(steps.length > 0, `the run awaiting approval names no awaiting step: ${short(waiting)}`)
      const held = (frames: Json[], step: string) =>
        frames.some((f) => f.step_id === step && decidesOtherThanAllow(f))
      const frames = await ctx.fx.traceShowing(
        runId,
        `the gate's decision on step ${steps.join(', ')}`,
        (fs) => steps.every((step) => held(fs, step)),
      )
      const missing = steps.filter((step) => !held(frames, step))
      assert(
        missing.length === 0,
        `no frame of step ${missing.join(', ')}, awaiting approval, records a policy decision other than allow: its frames are ${short(frames.filter((f) => missing.includes(String(f.step_id))))}`,
      )
    },
  },
  {
    id: 'runs.cancel-flushes-approvals',
    title:
      'Cancel flushes pending approvals and leaves a status none of queued, running, awaiting_approval, paused, for good',
    level: 'core',
    clauses: ['S3.4', 'S4.5'],
    // Mostly waiting on the deployment's clock on resources of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx) {
      const { runId } = await ctx.fx.awaitingRun()
      const res = await ctx.http.post(`/v1/runs/${runId}/cancel`)
      expectStatus(res, [200, 202, 204], 'POST /v1/runs/{run_id}/cancel')
      // §3 "cancel: marks the run terminal and flushes any pending approvals", with no timing: a 202 (RFC 9110
      // §15.3.3, accepted, not yet done) may land a moment later, so its effect is awaited within --wait-ms.
      const flushed = (run: Json) =>
        Array.isArray(run.awaiting) && run.awaiting.length === 0 && !ctx.fx.statuses.live(run.status)
      const after =
        res.status === 202
          ? await ctx.fx
              .waitForStatus(runId, (_s, run) => flushed(run), 'cancelled and flushed')
              .catch(() => ctx.fx.inspect(runId))
          : await ctx.fx.inspect(runId)
      assert(
        Array.isArray(after.awaiting) && after.awaiting.length === 0,
        `awaiting after cancel: ${short(after.awaiting)}`,
      )
      assert(
        typeof after.status === 'string' && !ctx.fx.statuses.live(after.status),
        `status after cancel is ${short(after.status)}, a live status (queued, awaiting_approval, ${ctx.fx.statuses.named('running', 'paused')}), not a terminal one`,
      )
      // A name the suite cannot place may be this deployment's terminal status or its own name for a live one.
      if (!ctx.fx.statuses.terminal(after.status))
        ctx.partial(ctx.fx.statuses.unknownReason(after.status, runId))
      // Terminal means for good: neither time nor a resume may bring the run back (the answer to resume is a gap).
      await sleep(300)
      await ctx.http.post(`/v1/runs/${runId}/resume`)
      for (const when of ['after a resume', 'later']) {
        if (when === 'later') await sleep(300)
        const later = await ctx.fx.inspect(runId)
        assert(later.status === after.status, `the cancelled run moved on to ${short(later.status)} ${when}`)
        assert(
          obj(later.plan).steps_completed === obj(after.plan).steps_completed,
          `steps kept completing after cancel (${when})`,
        )
      }
    },
  },
  {
    id: 'runs.cancel-state',
    title:
      'A cancelled run is `cancelled`, its trace records the flush, and further controls answer 409 invalid_state; a run cancelled while a step’s call runs keeps the trace and plan the cancel left (the late answer is dropped)',
    level: 'profile',
    clauses: ['S3.4'],
    // It waits for a cancelled step's call to end; its own runs.
    overlap: true,
    async run(ctx) {
      // Judged last, alongside the rest: a failure meanwhile is not an unhandled rejection.
      const late = cancelledDuringCall(ctx)
      late.catch(() => undefined)
      const { runId, waiting } = await ctx.fx.awaitingRun()
      const pending = obj((waiting.awaiting as unknown[])[0])
      const res = await ctx.http.post(`/v1/runs/${runId}/cancel`)
      expectStatus(res, 200, 'cancel')
      assert(
        ctx.fx.statuses.is(obj(res.body).status, 'cancelled'),
        `cancel answered status ${short(obj(res.body).status)}`,
      )
      assert(
        obj(obj(res.body).outcome).status === 'cancelled',
        `the cancelled run's outcome is ${short(obj(res.body).outcome)}`,
      )
      const { frames } = await ctx.fx.readTrace(runId)
      const kinds = frames.map((f) => f.kind)
      // The flush names what was flushed: the awaiting step, its tool and its queue; the cancel frame who cancelled
      // it, from which status, and the steps it flushed.
      const flush = frames.find((f) => f.kind === 'approval.flushed')
      assert(flush, `no approval.flushed frame: ${kinds.join(', ')}`)
      const request = frames.find((f) => f.kind === 'approval.requested' && f.step_id === pending.step_id)
      assert(
        flush.step_id === pending.step_id &&
          typeof flush.tool === 'string' &&
          flush.tool === request?.tool &&
          typeof flush.tool_id === 'string' &&
          flush.tool_id === request?.tool_id &&
          obj(flush.detail).queue === pending.queue,
        `the approval.flushed frame ${short(flush)} does not name the awaiting step ${short(pending)} and its tool`,
      )
      const cancelled = frames.find((f) => f.kind === 'control.cancelled')
      assert(cancelled, `no control.cancelled frame: ${kinds.join(', ')}`)
      const detail = obj(cancelled.detail)
      assert(
        typeof detail.by === 'string' &&
          detail.from === 'awaiting_approval' &&
          sameJson(detail.flushed_approvals, [pending.step_id]),
        `the control.cancelled frame's detail is ${short(detail)}, not by, from awaiting_approval and the flushed step`,
      )
      for (const action of ['pause', 'resume', 'cancel']) {
        const e = expectError(
          await ctx.http.post(`/v1/runs/${runId}/${action}`),
          409,
          `${action} after cancel`,
          'invalid_state',
        )
        const detail = obj(e.detail)
        assert(
          detail.status === 'cancelled' &&
            detail.action === action &&
            Array.isArray(detail.allowed_actions) &&
            detail.allowed_actions.length === 0,
          `detail: ${short(detail)} (a cancelled run allows no action)`,
        )
      }
      const problem = await late
      assert(problem === undefined, problem ?? '')
    },
  },
  {
    id: 'runs.pause-suspends',
    title: 'Pause suspends the scheduler: no further step completes while the run is paused',
    level: 'core',
    clauses: ['S3.3', 'S4.5'],
    // Mostly waiting on the deployment's clock on resources of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx) {
      // Eight slow steps: a pause that lands a moment after its answer (202, accepted) still finds the run
      // running on a loaded machine; with three, such a correct deployment's run could end before its pause landed.
      const { runId, agent } = await pausedRun(ctx, 8)
      // A twin run of the same agent, never paused, shows the scheduler works in the same window: without it a
      // deployment that never runs anything would pass.
      const control = await ctx.fx.startRun(agent)
      const slowMs = Number(ctx.config.profile.tools.slow.config?.delay_ms ?? 400)
      await sleep(slowMs + 300) // an in-flight call may finish and be recorded
      let a = await ctx.fx.inspect(runId)
      await sleep(slowMs * 2 + 300)
      let b = await ctx.fx.inspect(runId)
      const steps = (run: Json) => obj(run.plan).steps_completed
      // The call in flight when the pause lands may still finish and be recorded (§3.3 suspends the scheduler, it
      // does not abort a call), and on a loaded machine after the first look, whatever the pause answered (§4
      // shows no answer for it). So one step may complete after the first look, and then nothing more: one more
      // window, measured from the second look, lets it land; a run that ignores the pause completes several steps
      // over these windows.
      if (!ctx.fx.statuses.terminal(String(b.status)) && Number(steps(b)) === Number(steps(a)) + 1) {
        a = b
        await sleep(slowMs * 2 + 300)
        b = await ctx.fx.inspect(runId)
      }
      assert(!ctx.fx.statuses.terminal(String(b.status)), `the paused run ended as ${short(b.status)}`)
      assert(
        obj(a.plan).steps_completed === obj(b.plan).steps_completed,
        `steps_completed went from ${short(obj(a.plan).steps_completed)} to ${short(obj(b.plan).steps_completed)} while paused`,
      )
      const twin = await ctx.fx.waitForStatus(
        control.runId,
        (_s, run) => Number(obj(run.plan).steps_completed) > 0,
        'the unpaused twin run completing a step',
      )
      assert(Number(obj(twin.plan).steps_completed) > 0, 'the unpaused twin run completed no step either')
      await ctx.http.post(`/v1/runs/${runId}/cancel`)
      await ctx.http.post(`/v1/runs/${control.runId}/cancel`)
    },
  },
  {
    id: 'runs.pause-resume-states',
    title:
      'Pause answers status paused; resume restores it and the run finishes every step; a run paused while awaiting approval takes no decision until resumed',
    level: 'profile',
    clauses: ['S3.3', 'S4.5'],
    // Mostly waiting on the deployment's clock on resources of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx) {
      const { runId, paused } = await pausedRun(ctx)
      assert(
        ctx.fx.statuses.is(obj(paused.body).status, 'paused'),
        `pause answered status ${short(obj(paused.body).status)}`,
      )
      const again = obj(
        expectError(
          await ctx.http.post(`/v1/runs/${runId}/pause`),
          409,
          'pausing a paused run',
          'invalid_state',
        ).detail,
      )
      const allowed = Array.isArray(again.allowed_actions) ? again.allowed_actions : []
      assert(
        ctx.fx.statuses.is(again.status, 'paused') &&
          allowed.includes('resume') &&
          allowed.includes('cancel') &&
          !allowed.includes('pause'),
        `the 409's detail is ${short(again)}: a paused run allows resume and cancel, not pause`,
      )
      const resumed = await ctx.http.post(`/v1/runs/${runId}/resume`)
      expectStatus(resumed, 200, 'resume')
      assert(
        obj(resumed.body).status === 'queued' || ctx.fx.statuses.is(obj(resumed.body).status, 'running'),
        `resume answered ${short(obj(resumed.body).status)}`,
      )
      const final = await ctx.fx.waitForStatus(
        runId,
        (s) => ctx.fx.statuses.terminal(s),
        'terminal after resume',
      )
      assert(ctx.fx.statuses.is(final.status, 'succeeded'), `the resumed run ended ${short(final.status)}`)
      assert(
        obj(final.plan).steps_completed === 3,
        `steps_completed is ${short(obj(final.plan).steps_completed)}`,
      )
      const { frames } = await ctx.fx.readTrace(runId)
      const kinds = frames.map((f) => f.kind)
      assert(
        kinds.includes('control.paused') && kinds.includes('control.resumed'),
        `trace kinds: ${kinds.join(', ')}`,
      )
      // Resume goes back to where pause left: the run starts once, whether it was paused queued or running.
      assert(
        kinds.filter((k) => k === 'run.started').length === 1,
        `the resumed run started again: ${kinds.join(', ')}`,
      )
      const pausedDetail = obj(frames.find((f) => f.kind === 'control.paused')?.detail)
      const resumedDetail = obj(frames.find((f) => f.kind === 'control.resumed')?.detail)
      assert(
        typeof pausedDetail.by === 'string' &&
          (pausedDetail.from === 'queued' || ctx.fx.statuses.is(pausedDetail.from, 'running')),
        `the control.paused frame's detail is ${short(pausedDetail)}, not by and the status it paused`,
      )
      assert(
        resumedDetail.to === pausedDetail.from && ctx.fx.statuses.is(resumedDetail.from, 'paused'),
        `the control.resumed frame's detail is ${short(resumedDetail)}: it resumed to another status than ${short(pausedDetail.from)}`,
      )
      // A run paused while it awaits approval keeps its pending step, which no decision takes until the resume brings
      // the run back to awaiting_approval (the contract's x-run-state-machine: approve and reject leave
      // awaiting_approval only; §3 "Transitions: not shown").
      const waiting = await ctx.fx.awaitingRun()
      const stepId = firstAwaitingStep(waiting.waiting)
      expectStatus(
        await ctx.http.post(`/v1/runs/${waiting.runId}/pause`),
        200,
        'pausing a run awaiting approval',
      )
      const refused = obj(
        expectError(
          await decideStep(ctx, waiting.runId, stepId, 'approve'),
          409,
          `approving step ${stepId} of the run paused while it awaited approval`,
          'invalid_state',
        ).detail,
      )
      // Its detail says which step was refused and what the run awaits, as for a step that awaits nothing.
      assert(
        ctx.fx.statuses.is(refused.status, 'paused') &&
          refused.step_id === stepId &&
          Array.isArray(refused.awaiting) &&
          refused.awaiting.includes(stepId),
        `the 409 for step ${stepId} of the paused run has detail ${short(refused)}, not its status, the step and what the run awaits`,
      )
      const back = obj((await ctx.http.post(`/v1/runs/${waiting.runId}/resume`)).body)
      assert(
        back.status === 'awaiting_approval' &&
          Array.isArray(back.awaiting) &&
          back.awaiting.some((a) => obj(a).step_id === stepId),
        `the run resumed to ${short(back.status)}, awaiting ${short(back.awaiting)}: not back to awaiting ${stepId}`,
      )
      expectStatus(await decideStep(ctx, waiting.runId, stepId, 'approve'), 200, 'approving after the resume')
      await ctx.http.post(`/v1/runs/${waiting.runId}/cancel`)
    },
  },
  {
    id: 'runs.trace-frames',
    title:
      'The trace lists frames in time order with ts, step_id, kind; tool.call frames name the tool, latency and result',
    level: 'core',
    clauses: ['S1.11', 'S2.6', 'S4.6'],
    async run(ctx) {
      const { runId } = await ctx.fx.completedRun()
      const { frames } = await ctx.fx.readTrace(runId)
      assert(frames.length > 0, 'the trace of a finished run is empty')
      // §2 "The trace lists every step, tool call, policy decision and approval in order". Frames of one run often
      // share a millisecond, so `ts` alone cannot show a reversed list: when the deployment numbers its frames
      // (an integer `seq`, or any integer position field it names so), the listing must follow that numbering.
      let last = ''
      let lastSeq = Number.NEGATIVE_INFINITY
      for (const [i, f] of frames.entries()) {
        assert(isRfc3339(f.ts), `frame ${i} ts is not RFC 3339: ${short(f)}`)
        assert(typeof f.kind === 'string', `frame ${i} has no kind: ${short(f)}`)
        assert('step_id' in f, `frame ${i} has no step_id: ${short(f)}`)
        const t = new Date(String(f.ts)).toISOString()
        assert(t >= last, `frame ${i} (${String(f.ts)}) is older than the one before it`)
        last = t
        if (Number.isInteger(f.seq)) {
          const seq = f.seq as number
          assert(
            seq > lastSeq,
            `frame ${i} has seq ${seq} after seq ${lastSeq}: the trace is not listed in order`,
          )
          lastSeq = seq
        }
      }
      const calls = frames.filter((f) => f.kind === 'tool.call')
      assert(calls.length >= 1, 'no tool.call frame in the trace of a run over two tools')
      for (const c of calls) {
        assert(typeof c.tool === 'string' && c.tool !== '', `tool.call without tool: ${short(c)}`)
        assert(typeof c.step_id === 'string', `tool.call without step_id: ${short(c)}`)
        assert(
          Number.isInteger(c.latency_ms) && (c.latency_ms as number) >= 0,
          `latency_ms is not an integer: ${short(c)}`,
        )
        assert(typeof c.result === 'string', `tool.call without result: ${short(c)}`)
      }
      assert(
        frames.some((f) => f.policy === 'allow'),
        'no frame records an allow policy decision',
      )
    },
  },
  {
    id: 'runs.trace-pages-walk',
    title:
      'A trace served as pages honours cursor and limit: walked two frames a page (one, for a trace of two), its cursors give every frame of the whole trace once, in its order',
    level: 'core',
    clauses: ['S4.6', 'S8.1'],
    async run(ctx) {
      // §4 "GET /v1/runs/{run_id}/trace | Cursor pagination parameters. | ... as pages of frames, in order", §8
      // "Cursor-based. Query parameters cursor and limit." A trace served as a stream has no pages to walk.
      const { runId } = await ctx.fx.completedRun()
      const probe = await getTrace(ctx.http, `/v1/runs/${runId}/trace?limit=1`)
      expectStatus(probe, 200, `GET /v1/runs/${runId}/trace?limit=1`)
      if (streamedFrames(probe))
        notApplicable(
          'the deployment serves the trace as a stream of frames, which §4 allows: there are no pages',
        )
      const { frames: whole } = await ctx.fx.readTrace(runId, 200)
      assert(
        whole.length >= 2,
        `the trace of a finished run over two tools has ${whole.length} frames: it lists every tool call (§2)`,
      )
      // Pages of two where the trace has three frames or more (a page holding more than one), else of one.
      const limit = whole.length > 2 ? 2 : 1
      let res = limit === 1 ? probe : await ctx.http.get(`/v1/runs/${runId}/trace?limit=${limit}`)
      expectStatus(res, 200, `GET /v1/runs/${runId}/trace?limit=${limit}`)
      const walked: Json[] = []
      for (let page = 0; page <= whole.length + 1; page++) {
        const items = listPage(ctx, res).items as Json[] | undefined
        if (!items) fail(`page ${page + 1} of the trace has no array of frames: ${short(res.body)}`)
        assert(
          items.length <= limit,
          `page ${page + 1} of the trace at limit=${limit} holds ${items.length} frames`,
        )
        walked.push(...items)
        const next = nextPageCursor(ctx, res, limit, `GET /v1/runs/${runId}/trace?limit=${limit}`)
        if (!next || items.length === 0) break
        res = await ctx.http.get(`/v1/runs/${runId}/trace?limit=${limit}&cursor=${encodeURIComponent(next)}`)
        expectStatus(res, 200, `page ${page + 2} of the trace`)
      }
      const differs = walked.findIndex((f, i) => !sameJson(f, whole[i]))
      assert(
        walked.length === whole.length && differs === -1,
        `walked ${limit} frames a page, the trace gave ${walked.length} frames, read whole ${whole.length}` +
          (differs >= 0
            ? `; frame ${differs} differs: ${short(walked[differs])} against ${short(whole[differs])}`
            : ''),
      )
    },
  },
  {
    id: 'runs.trace-sequence',
    title:
      'Frames are numbered 1..n without gaps: run.started first, a policy decision before each call (its latency within their times), run.succeeded last',
    level: 'profile',
    clauses: ['S2.6'],
    async run(ctx) {
      const { runId } = await ctx.fx.completedRun()
      const { frames } = await ctx.fx.readTrace(runId)
      for (const [i, f] of frames.entries()) assert(f.seq === i + 1, `frame ${i} has seq ${short(f.seq)}`)
      assert(frames[0]?.kind === 'run.started', `first frame is ${short(frames[0]?.kind)}`)
      assert(frames.at(-1)?.kind === 'run.succeeded', `last frame is ${short(frames.at(-1)?.kind)}`)
      for (const [i, f] of frames.entries()) {
        if (f.kind !== 'tool.call') continue
        const decision = frames
          .slice(0, i)
          .findLast((g) => g.step_id === f.step_id && g.kind === 'policy.decision')
        assert(decision?.policy === 'allow', `no allow decision before the call of ${String(f.step_id)}`)
        // The call ran between its decision and its own frame: its latency fits between their times (ms, rounded).
        const spent = Date.parse(String(f.ts)) - Date.parse(String(decision?.ts))
        assert(
          Number(f.latency_ms) <= spent + 1,
          `the call of ${String(f.step_id)} took latency_ms ${short(f.latency_ms)}, more than the ${spent} ms between its decision and its frame`,
        )
      }
    },
  },
  {
    id: 'runs.trace-paging',
    title: 'Paging the trace one frame at a time yields the same frames, once each, in order',
    level: 'profile',
    clauses: ['S4.6'],
    async run(ctx) {
      const { runId } = await ctx.fx.completedRun()
      const whole = await ctx.fx.readTrace(runId, 200)
      const single = await ctx.fx.readTrace(runId, 1)
      assert(
        single.pages >= whole.frames.length,
        `${whole.frames.length} frames came in ${single.pages} pages of one`,
      )
      assert(sameJson(single.frames, whole.frames), 'paged frames differ from the whole trace')
    },
  },
  {
    id: 'runs.trace-streaming',
    title:
      'The trace stream (SSE) gives the same frames as paging, then event: end with the run’s status and last seq; opened on a live run, it follows the run to its end, with no keep-alive comment while frames come',
    level: 'profile',
    clauses: ['S4.6'],
    // It follows a live run of slow steps to its end; its own runs.
    overlap: true,
    async run(ctx) {
      const { runId } = await ctx.fx.completedRun()
      const paged = await ctx.fx.readTrace(runId)
      const res = await ctx.http.get(`/v1/runs/${runId}/trace/stream`, {
        headers: { accept: 'text/event-stream' },
      })
      expectStatus(res, 200, 'SSE trace')
      assert(
        (res.headers['content-type'] ?? '').startsWith('text/event-stream'),
        `content-type ${res.headers['content-type']}`,
      )
      const events = parseSse(res.text)
      const frames = events.filter((e) => e.event === 'frame').map((e) => JSON.parse(e.data) as Json)
      assert(
        events.at(-1)?.event === 'end',
        `the stream did not end with event: end (${events.map((e) => e.event).join(',')})`,
      )
      assert(sameJson(frames, paged.frames), 'streamed frames differ from paged frames')
      assert(
        events.filter((e) => e.event === 'frame').every((e, i) => e.id === String(frames[i]?.seq)),
        'SSE ids are not the frame seqs',
      )
      const end = JSON.parse(events.at(-1)?.data ?? '{}') as Json
      assert(
        end.run_status === 'succeeded' && end.last_seq === frames.at(-1)?.seq,
        `the end event's data is ${short(end)}, not the run's status and the last frame's seq`,
      )
      // A stream opened on a live run follows it: its frames as they come, then the end once it is over.
      const live = await ctx.fx.startRun(await ctx.fx.slowAgent(2))
      const followed = await ctx.http.get(`/v1/runs/${live.runId}/trace/stream`, {
        headers: { accept: 'text/event-stream' },
      })
      // The reference sends a keep-alive comment only after 15 s without a frame (for proxies' idle timeouts): a
      // stream whose frames come sooner carries none.
      const comments = followed.text.split(/\r?\n/).filter((l) => l.startsWith(':'))
      assert(
        comments.length === 0,
        `the stream of a live run whose frames came within a second carries comment lines ${short(comments)}`,
      )
      const liveEvents = parseSse(followed.text)
      const liveFrames = liveEvents.filter((e) => e.event === 'frame').map((e) => JSON.parse(e.data) as Json)
      const livePaged = await ctx.fx.readTrace(live.runId)
      assert(
        liveEvents.at(-1)?.event === 'end' &&
          sameJson(liveFrames, livePaged.frames) &&
          liveFrames.at(-1)?.kind === 'run.succeeded',
        `the stream of a live run gave ${liveEvents.map((e) => e.event).join(',')}, frames ${short(liveFrames.map((f) => f.kind))}`,
      )
    },
  },
  {
    id: 'runs.trace-cursor-resumes',
    title: 'The trace_cursor of an inspection reads only newer frames',
    level: 'profile',
    clauses: ['S4.6'],
    async run(ctx) {
      const { runId } = await ctx.fx.completedRun()
      const run = await ctx.fx.inspect(runId)
      const res = await ctx.http.get(
        `/v1/runs/${runId}/trace?cursor=${encodeURIComponent(String(run.trace_cursor))}`,
      )
      expectStatus(res, 200, 'trace from trace_cursor')
      const b = obj(res.body)
      assert(
        Array.isArray(b.data) && b.data.length === 0,
        `frames after the last cursor of a finished run: ${short(b.data)}`,
      )
      assert(b.next_cursor === null, `next_cursor of a finished trace is ${short(b.next_cursor)}`)
    },
  },
  {
    id: 'runs.start-body-validation',
    title: 'Unknown mode or trace_level values answer 400; the spec’s own body is accepted',
    level: 'profile',
    clauses: ['S2.5'],
    async run(ctx) {
      const agent = await ctx.fx.agent()
      expectError(
        await ctx.http.post(`/v1/agents/${agent}/runs`, { ...runBody(), mode: 'turbo' }),
        400,
        'mode turbo',
        'invalid_request',
      )
      expectError(
        await ctx.http.post(`/v1/agents/${agent}/runs`, { ...runBody(), trace_level: 'verbose' }),
        400,
        'trace_level verbose',
        'invalid_request',
      )
      const ok = await ctx.http.post(`/v1/agents/${agent}/runs`, runBody())
      if (ok.status !== 201) fail(`the spec's example body answered ${ok.status}`)
    },
  },
]
