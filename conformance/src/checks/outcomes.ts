/**
 * What the trace records beyond the frames the spec shows. §2 leaves open the values of `trace_level` beyond
 * `detailed` and of a frame's `kind` beyond `tool.call` ("not shown"), and names no approval endpoint; the reference
 * profile's choices (the `summary` level, `step.failed`, `approval.granted`/`rejected` and `run.failed` frames, a
 * step decided once) are its own, so the check is profile. It also gives the contract coverage report those
 * levels and frame kinds, and the approval endpoint's 409.
 */
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { approvalUrl, decideStep, expectStatus, firstAwaitingStep, type Json } from '../fixtures.js'
import { obj } from '../http.js'
import { assert } from '../types.js'
import { short } from '../wait.js'

const hasDetail = (f: Json) => f.detail !== undefined && f.detail !== null

/** The frames of a run once it ended (waited for with --wait-ms), and how it ended. */
async function endedTrace(
  ctx: CheckContext,
  runId: string,
): Promise<{ status: unknown; kinds: string[]; frames: Json[] }> {
  const final = await ctx.fx.waitForStatus(runId, (s) => ctx.fx.statuses.terminal(s), 'ended')
  const { frames } = await ctx.fx.readTrace(runId)
  return { status: final.status, kinds: frames.map((f) => String(f.kind)), frames }
}

/** Decides the first awaiting step of a fresh run that awaits approval; answers the run, its step and the answer. */
export async function decided(ctx: CheckContext, decision: 'approve' | 'reject') {
  const { runId, waiting } = await ctx.fx.awaitingRun()
  const pending = obj((waiting.awaiting as unknown[] | undefined)?.[0])
  const stepId = String(pending.step_id)
  const res = await decideStep(ctx, runId, stepId, decision)
  expectStatus(res, 200, `${decision} of step ${stepId}`)
  const { method } = ctx.config.approval
  return {
    runId,
    stepId,
    url: approvalUrl(ctx, runId, stepId),
    method,
    queue: pending.queue,
    answer: obj(res.body),
  }
}

export const outcomeChecks: Check[] = [
  {
    id: 'runs.trace-levels-and-outcomes',
    title:
      'A summary trace carries no frame detail, a detailed one does, a malformed Last-Event-ID is refused 400; a failing tool leaves step.failed and run.failed (the step counted completed), as does a tool retired before its approved step ran (tool_unavailable), an approval approval.granted, a rejection approval.rejected and run.failed, each outcome naming its step (tool_failed, approval_rejected); an approved step’s allow says so; the grant and the flush of a run’s later step name that step’s tool; a decided step, or one that awaits nothing, answers 409',
    level: 'profile',
    clauses: ['S2.6', 'S3.2'],
    // Runs of its own, waited on the deployment's clock: alongside the checks after it.
    overlap: true,
    async run(ctx) {
      const [ok, failing] = [await ctx.fx.tool('succeed'), await ctx.fx.tool('fail')]
      const problems: string[] = []
      const expect = (holds: boolean, problem: string) => {
        if (!holds) problems.push(problem)
      }
      await Promise.all([
        (async () => {
          const agent = await ctx.fx.newToolAgent([ok])
          const summary = await ctx.fx.startRun(agent, { trace_level: 'summary' })
          // The detailed run is the one other checks share (the spec's example body asks for `detailed`).
          const detailed = await ctx.fx.completedRun()
          const [s, d] = [await endedTrace(ctx, summary.runId), await endedTrace(ctx, detailed.runId)]
          expect(
            !s.frames.some((f) => f.kind === 'tool.call' && hasDetail(f)),
            `a summary trace has tool.call frames with detail: ${short(s.frames.find(hasDetail))}`,
          )
          expect(
            d.frames.some((f) => f.kind === 'tool.call' && hasDetail(f)),
            `no tool.call frame of a detailed trace carries detail: ${short(d.frames)}`,
          )
          // The SSE form resumes after the frame its Last-Event-ID names: a value that names no frame is a bad
          // request, not a stream from the start.
          const resume = await ctx.http.get(`/v1/runs/${summary.runId}/trace/stream`, {
            headers: { accept: 'text/event-stream', 'last-event-id': 'not-a-frame' },
          })
          expect(
            resume.status === 400,
            `the trace stream with Last-Event-ID: not-a-frame answered ${resume.status}, not 400`,
          )
        })(),
        (async () => {
          const agent = await ctx.fx.newToolAgent([failing])
          const failedRun = (await ctx.fx.startRun(agent)).runId
          const t = await endedTrace(ctx, failedRun)
          expect(
            ctx.fx.statuses.is(t.status, 'failed') &&
              t.kinds.includes('step.failed') &&
              t.kinds.at(-1) === 'run.failed',
            `a run of a failing tool ended ${short(t.status)} with frames ${t.kinds.join(', ')} (expected step.failed, then run.failed last)`,
          )
          // The failure is the run's outcome (tool_failed, naming the step) and the step.failed frame's reason.
          const inspected = await ctx.fx.inspect(failedRun)
          const error = obj(obj(inspected.outcome).error)
          // The failed step is done with: the plan counts it completed, nothing pending.
          const plan = obj(inspected.plan)
          expect(
            plan.steps_total === 1 && plan.steps_completed === 1 && plan.steps_pending === 0,
            `the plan of a run whose one step failed reads ${short(plan)}, not 1 step completed and none pending`,
          )
          expect(
            obj(inspected.outcome).status === 'failed',
            `the failed run's outcome has status ${short(obj(inspected.outcome).status)}, not failed`,
          )
          const stepFailed = t.frames.find((f) => f.kind === 'step.failed')
          expect(
            error.code === 'tool_failed' &&
              typeof error.message === 'string' &&
              error.message.includes(String(stepFailed?.step_id)) &&
              typeof obj(stepFailed?.detail).reason === 'string' &&
              sameJson(obj(obj(t.frames.at(-1)?.detail).error), error),
            `the failing run's outcome error ${short(error)} and step.failed frame ${short(stepFailed)} do not name the failed step and its reason`,
          )
        })(),
        (async () => {
          // A step whose tool was retired while it awaited approval is not called once approved: it fails, and the
          // run with it (tool_unavailable).
          const tool = await ctx.fx.newTool('succeed')
          const agent = await ctx.fx.newToolAgent([tool], ctx.config.profile.approvalBehavior)
          const { runId } = await ctx.fx.startRun(agent)
          const waiting = await ctx.fx.waitForStatus(
            runId,
            (s) => s !== 'queued' && !ctx.fx.statuses.is(s, 'running'),
            'settled',
          )
          const stepId = firstAwaitingStep(waiting)
          expectStatus(await ctx.http.delete(`/v1/tools/${tool.id}`), 200, 'retiring the awaited step’s tool')
          expectStatus(await decideStep(ctx, runId, stepId, 'approve'), 200, 'approving')
          const t = await endedTrace(ctx, runId)
          const error = obj(obj((await ctx.fx.inspect(runId)).outcome).error)
          expect(
            ctx.fx.statuses.is(t.status, 'failed') &&
              error.code === 'tool_unavailable' &&
              typeof error.message === 'string' &&
              error.message !== '' &&
              t.frames.some(
                (f) =>
                  f.kind === 'step.failed' && f.step_id === stepId && obj(f.detail).reason === error.message,
              ) &&
              !t.kinds.includes('tool.call'),
            `a step whose tool was retired before its approval ended ${short(t.status)} (${short(error)}) with frames ${t.kinds.join(', ')} (expected step.failed giving the outcome's message as its reason, no tool.call, tool_unavailable)`,
          )
        })(),
        (async () => {
          // A step that does not await approval is not decided: its run's one awaiting step stays as it was.
          const { runId, waiting } = await ctx.fx.awaitingRun()
          const awaitingIds = (waiting.awaiting as unknown[]).map((a) => obj(a).step_id)
          const wrong = await decideStep(ctx, runId, 'step_999', 'approve')
          const wrongDetail = obj(obj(obj(wrong.body).error).detail)
          expect(
            wrong.status === 409 &&
              wrongDetail.step_id === 'step_999' &&
              sameJson(wrongDetail.awaiting, awaitingIds),
            `deciding step_999 of a run awaiting ${short(awaitingIds)} answered ${wrong.status} ${short(wrong.body)}, not 409 naming the awaiting steps`,
          )
          const still = await ctx.fx.inspect(runId)
          expect(
            still.status === 'awaiting_approval' && sameJson(still.awaiting, waiting.awaiting),
            `deciding step_999 changed the run: ${short(still.status)}, awaiting ${short(still.awaiting)}`,
          )
        })(),
        (async () => {
          const approved = await decided(ctx, 'approve')
          const listed = Array.isArray(approved.answer.awaiting) ? approved.answer.awaiting : []
          expect(
            !listed.some((a) => obj(a).step_id === approved.stepId),
            `the approval's answer still lists step ${approved.stepId} as awaiting: ${short(listed)}`,
          )
          // Decided once: the step no longer awaits anything (invalid_state), whatever the second decision says.
          const again = await ctx.http.request(approved.method, approved.url, {
            body: { decision: 'reject' },
          })
          expect(
            again.status === 409,
            `deciding step ${approved.stepId} a second time answered ${again.status}, not 409`,
          )
          const { frames } = await ctx.fx.readTrace(approved.runId)
          const granted = frames.find((f) => f.kind === 'approval.granted' && f.step_id === approved.stepId)
          const requested = frames.find(
            (f) => f.kind === 'approval.requested' && f.step_id === approved.stepId,
          )
          expect(
            granted !== undefined,
            `no approval.granted frame for step ${approved.stepId}: ${frames.map((f) => f.kind).join(', ')}`,
          )
          // The approved step is then called: its allow decision says it was approved.
          const ended = await endedTrace(ctx, approved.runId)
          const allowed = ended.frames.find(
            (f) => f.kind === 'policy.decision' && f.step_id === approved.stepId && f.policy === 'allow',
          )
          expect(
            ctx.fx.statuses.is(ended.status, 'succeeded') && obj(allowed?.detail).approved === true,
            `the approved run ended ${short(ended.status)}, its step's allow decision ${short(allowed)} (expected detail.approved true)`,
          )
          // The request names the queue and reason the run's awaiting item gave.
          expect(
            obj(requested?.detail).queue === approved.queue &&
              typeof obj(requested?.detail).reason === 'string',
            `the approval.requested frame ${short(requested)} does not name the queue ${short(approved.queue)} and a reason`,
          )
          // The grant names the step's tool, as its request did, who decided and in which queue.
          expect(
            granted === undefined ||
              (typeof granted.tool === 'string' &&
                granted.tool === requested?.tool &&
                typeof granted.tool_id === 'string' &&
                granted.tool_id === requested?.tool_id &&
                typeof obj(granted.detail).decided_by === 'string' &&
                obj(granted.detail).queue === approved.queue),
            `the approval.granted frame ${short(granted)} does not name the step's tool, its decider and queue ${short(approved.queue)}`,
          )
        })(),
        (async () => {
          // Three steps of three tools, each awaiting approval: the second step's grant and the third's flush (the
          // run cancelled while it waits) name their own step's tool, not another step's.
          const tools = [
            await ctx.fx.newTool('succeed'),
            await ctx.fx.newTool('succeed'),
            await ctx.fx.newTool('succeed'),
          ]
          const agent = await ctx.fx.newToolAgent(tools, ctx.config.profile.approvalBehavior)
          const { runId } = await ctx.fx.startRun(agent)
          // The step the run awaits next (one not decided yet), or undefined once it ended without one.
          const decidedSteps: string[] = []
          const nextAwaited = async (): Promise<string | undefined> => {
            const run = await ctx.fx.awaitingAnotherStep(
              runId,
              decidedSteps,
              `awaiting approval of step ${decidedSteps.length + 1}`,
            )
            if (run.status === 'awaiting_approval') return firstAwaitingStep(run)
            ctx.partial(
              `a run of three approval steps ended ${short(run.status)} after ${decidedSteps.length} approvals`,
            )
            return undefined
          }
          for (let i = 0; i < 2; i++) {
            const stepId = await nextAwaited()
            if (stepId === undefined) return
            expectStatus(await decideStep(ctx, runId, stepId, 'approve'), 200, `approving step ${stepId}`)
            decidedSteps.push(stepId)
          }
          const thirdStep = await nextAwaited()
          if (thirdStep === undefined) return
          expectStatus(
            await ctx.http.post(`/v1/runs/${runId}/cancel`),
            [200, 202, 204],
            'cancel at the third approval',
          )
          // A cancel accepted (202) may land a moment later: its flush is waited for within --wait-ms.
          const frames = await ctx.fx.traceShowing(runId, `the flush of step ${thirdStep}`, (fs) =>
            fs.some((f) => f.kind === 'approval.flushed' && f.step_id === thirdStep),
          )
          const requestOf = (stepId: string) =>
            frames.find((f) => f.kind === 'approval.requested' && f.step_id === stepId)
          const namesItsTool = (f: Json | undefined, stepId: string) =>
            f !== undefined &&
            typeof f.tool_id === 'string' &&
            f.tool === requestOf(stepId)?.tool &&
            f.tool_id === requestOf(stepId)?.tool_id
          const secondStep = decidedSteps[1] ?? ''
          const grant = frames.find((f) => f.kind === 'approval.granted' && f.step_id === secondStep)
          expect(
            namesItsTool(grant, secondStep),
            `the approval.granted frame of step ${secondStep} (a run's second) ${short(grant)} does not name that step's tool ${short(requestOf(secondStep))}`,
          )
          const flush = frames.find((f) => f.kind === 'approval.flushed' && f.step_id === thirdStep)
          expect(
            namesItsTool(flush, thirdStep),
            `the approval.flushed frame of step ${thirdStep} (a run's third) ${short(flush)} does not name that step's tool ${short(requestOf(thirdStep))}`,
          )
        })(),
        (async () => {
          const rejected = await decided(ctx, 'reject')
          const t = await endedTrace(ctx, rejected.runId)
          expect(
            ctx.fx.statuses.is(t.status, 'failed') &&
              t.kinds.includes('approval.rejected') &&
              t.kinds.at(-1) === 'run.failed',
            `a rejected run ended ${short(t.status)} with frames ${t.kinds.join(', ')} (expected approval.rejected, then run.failed last)`,
          )
          // The rejection is the run's outcome: its error names the rejected step and queue, in the inspection and in
          // the run.failed frame alike.
          const error = obj(obj((await ctx.fx.inspect(rejected.runId)).outcome).error)
          const errorDetail = obj(error.detail)
          expect(
            error.code === 'approval_rejected' &&
              typeof error.message === 'string' &&
              error.message !== '' &&
              errorDetail.step_id === rejected.stepId &&
              errorDetail.queue === rejected.queue,
            `the rejected run's outcome error is ${short(error)}, not approval_rejected naming step ${rejected.stepId} and its queue`,
          )
          const failedFrame = t.frames.at(-1)
          expect(
            sameJson(obj(obj(failedFrame?.detail).error), error),
            `the run.failed frame's detail ${short(failedFrame?.detail)} does not carry the outcome's error`,
          )
        })(),
      ])
      assert(problems.length === 0, problems.join('; '))
    },
  },
]
