/**
 * "Send a test": the made-up event an operator sends after configuring a destination, to see what will arrive. The
 * reference profile's `POST /v1/destinations/{id}/test` (an extension: spec §6 routes events to destinations and shows
 * nothing of testing them). A sample is worth sending only if it looks like the real thing: the delivery body the
 * contract documents for its kind, naming a subject as the real event does, and marked so no one acts on it.
 */
import type { Check, CheckContext } from '../check.js'
import { expectStatus } from '../fixtures.js'
import { obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import { assert } from '../types.js'
import { short } from '../wait.js'
import { cloudEventsSink } from './destinations.js'
import { contractEventKinds, subjectField } from './every-kind.js'
import { decided } from './outcomes.js'

/** The paths of the empty strings in a value, nested ones too (`detail.violation`). */
function emptyStrings(value: unknown, path = ''): string[] {
  if (value === '') return [path || '(the body)']
  if (value === null || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([k, v]) => emptyStrings(v, path ? `${path}.${k}` : k))
}

/**
 * What is wrong with the sample of `kind` that arrived (picked by its `event` and `test: true`), judged against the
 * contract and the real event.
 */
function sampleProblems(ctx: CheckContext, kind: string, body: Record<string, unknown>): string[] {
  const problems: string[] = []
  if (typeof body.id !== 'string' || body.id === '') problems.push(`its id is ${short(body.id)}`)
  const pointer = ctx.contract.deliverySchemaPointer(kind)
  if (pointer === undefined) problems.push('the contract documents no delivery body for its kind')
  else {
    // A destination's body is the webhook's without its signature (the destination's own transport authenticates).
    const errors = ctx.contract.errors(pointer, body).filter((e) => !/required property 'signature'/.test(e))
    if (errors.length > 0) problems.push(`it breaks the contract's ${kind} body: ${errors.join('; ')}`)
  }
  const field = subjectField(kind)
  if (field && (typeof body[field] !== 'string' || body[field] === ''))
    problems.push(`it names no subject: ${field} is ${short(body[field])}`)
  const empty = emptyStrings(body)
  if (empty.length > 0) problems.push(`${empty.join(', ')} empty`)
  return problems
}

/**
 * The kinds whose real events the check causes itself (a tool registered and retired, an agent created and deleted,
 * a run that succeeds, one that fails, one approved after it waited), to hold each sample beside the real thing.
 */
const CAUSED = [
  'tool.registered',
  'tool.retired',
  'agent.created',
  'agent.deleted',
  'run.started',
  'run.succeeded',
  'run.failed',
  'run.awaiting_approval',
  'run.resumed',
]

/** The fields a body carries, its signature and test mark aside. */
const fieldsOf = (body: Record<string, unknown>) =>
  Object.keys(body).filter((k) => k !== 'signature' && k !== 'test')

/**
 * What the sample of a kind lacks or adds against the real events of that kind the sink got: a field every real
 * one carries and the sample not, a field none carries and the sample does, the same for its `outcome`, and a
 * `status` other than the one every real event of the kind carries.
 */
function unlikeReal(sample: Record<string, unknown>, real: Record<string, unknown>[]): string[] {
  const problems: string[] = []
  const compare = (what: string, got: Record<string, unknown>, seen: Record<string, unknown>[]) => {
    const keys = new Set(fieldsOf(got))
    const every = fieldsOf(seen[0] ?? {}).filter((k) => seen.every((r) => k in r))
    const some = new Set(seen.flatMap(fieldsOf))
    const lacks = every.filter((k) => !keys.has(k))
    const adds = [...keys].filter((k) => !some.has(k))
    if (lacks.length > 0) problems.push(`${what} lacks ${lacks.join(', ')}`)
    if (adds.length > 0) problems.push(`${what} adds ${adds.join(', ')}`)
  }
  compare('it', sample, real)
  const outcomes = real.map((r) => r.outcome).filter((o) => o !== null && typeof o === 'object')
  if (outcomes.length === real.length && outcomes.length > 0)
    compare('its outcome', obj(sample.outcome), outcomes.map(obj))
  const statuses = new Set(real.map((r) => r.status))
  const [status] = statuses
  if (statuses.size === 1 && typeof status === 'string' && sample.status !== status)
    problems.push(`its status is ${short(sample.status)}, the real one's ${status}`)
  return problems
}

/** What the check's own real events are about: its agent, its tool and its runs. */
interface Caused {
  agent: string
  tool: string
  runs: string[]
}

/** Causes one real event of each CAUSED kind in the check's own workspace; answers what they are about. */
async function causeRealEvents(ctx: CheckContext): Promise<Caused> {
  const [ok, failing] = [await ctx.fx.newTool('succeed'), await ctx.fx.tool('fail')]
  const agent = await ctx.fx.newToolAgent([ok])
  const run = await ctx.fx.startRun(agent)
  const failed = await ctx.fx.startRun(await ctx.fx.newToolAgent([failing]))
  const approved = await decided(ctx, 'approve')
  for (const id of [run.runId, failed.runId])
    await ctx.fx.waitForStatus(id, (s) => ctx.fx.statuses.terminal(s), 'ended')
  const deleted = await ctx.http.delete(`/v1/agents/${agent.id}`)
  assert(deleted.status < 300, `deleting the agent answered ${deleted.status}`)
  const retired = await ctx.http.delete(`/v1/tools/${ok.id}`)
  assert(retired.status < 300, `retiring the tool answered ${retired.status}`)
  return { agent: agent.id, tool: ok.id, runs: [run.runId, failed.runId, approved.runId] }
}

/** Whether a delivery's event is about what the check caused (the checks alongside cause events of these kinds too). */
const aboutCaused = (caused: Caused) => (d: Delivery) => {
  const b = d.body ?? {}
  return (
    b.agent_id === caused.agent ||
    b.tool_id === caused.tool ||
    (typeof b.run_id === 'string' && caused.runs.includes(b.run_id))
  )
}

export const testSendChecks: Check[] = [
  {
    id: 'destinations.test-sends-each-kind',
    title:
      "A destination's test send of each event kind (POST /v1/destinations/{id}/test naming the kind) answers ok and delivers one made-up event of that kind, marked test: true, shaped as the contract's delivery body of its kind (its signature aside) and naming its subject (its run, task, agent, tool or connector), with no empty string in it, and one naming no kind is of the destination's first kind; for the kinds the check causes (a tool registered and retired, an agent created and deleted, runs that succeed, fail, wait and resume), the sample carries the real event's fields, its outcome's and its status",
    level: 'profile',
    clauses: ['S6.5'],
    // Seventeen sends and their deliveries to the receiver: alongside the checks after it.
    overlap: true,
    async run(ctx) {
      const kinds = contractEventKinds(ctx)
      assert(kinds.length > 0, 'the contract lists no EventKind enum')
      // The kinds the check causes listed, in binary mode (the body is the event): each test send names its own
      // kind, and the real events of those kinds arrive beside the samples.
      const sink = await cloudEventsSink(ctx, 'cloudevents-test-sends', CAUSED, () => ({
        mode: 'binary',
      }))
      const ours = aboutCaused(await causeRealEvents(ctx))
      const problems: string[] = []
      const ids = new Set<unknown>()
      for (const kind of kinds) {
        const res = await ctx.http.post(`/v1/destinations/${sink.id}/test`, { event: kind })
        expectStatus(res, 200, `a test send of ${kind}`)
        if (obj(res.body).ok !== true) {
          problems.push(`the test send of ${kind} answered ${short(res.body)}`)
          continue
        }
        const samples = ctx.receiver!.deliveries.filter(
          (d) => d.path.endsWith(`/${sink.tag}`) && d.body?.test === true && d.body.event === kind,
        )
        const body = samples[0]?.body
        if (samples.length !== 1 || body === undefined) {
          problems.push(`the test send of ${kind} delivered ${samples.length} samples of it, not 1`)
          continue
        }
        ids.add(body.id)
        for (const p of sampleProblems(ctx, kind, body)) problems.push(`the sample of ${kind}: ${p}`)
        if (!CAUSED.includes(kind)) continue
        const isReal = (d: Delivery) =>
          d.path.endsWith(`/${sink.tag}`) && d.body?.event === kind && d.body.test !== true
        // The check's own event of the kind, then every real one of the kind seen so far: a field one real event
        // carries and another not (an approval's resume names its step, a pause's resume none) may be in the sample.
        if (!(await ctx.receiver!.waitFor((d) => isReal(d) && ours(d), ctx.config.waitMs))) {
          problems.push(
            `the check's own ${kind} did not reach the destination listing it within ${ctx.config.waitMs} ms`,
          )
          continue
        }
        const seen = ctx.receiver!.deliveries.filter(isReal).map((d) => d.body ?? {})
        for (const p of unlikeReal(body, seen))
          problems.push(`the sample of ${kind}, beside the real events of its kind: ${p}`)
      }
      if (problems.length === 0 && ids.size !== kinds.length)
        problems.push(`${kinds.length} samples carried ${ids.size} ids: each is an event of its own`)
      // Naming no kind, a test send is of the destination's first kind, as the destination lists them.
      const listed = obj((await ctx.http.get(`/v1/destinations/${sink.id}`)).body).events
      const first = Array.isArray(listed) ? listed[0] : undefined
      const plain = await ctx.http.post(`/v1/destinations/${sink.id}/test`, {})
      expectStatus(plain, 200, 'a test send naming no kind')
      if (obj(plain.body).event !== first)
        problems.push(
          `a test send naming no kind sent ${short(obj(plain.body).event)}, not the destination's first kind ${short(first)}`,
        )
      assert(problems.length === 0, problems.join('; '))
    },
  },
]
