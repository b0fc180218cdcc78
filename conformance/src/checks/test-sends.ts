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
import { cloudEventsSink } from './destinations/index.js'
import {
  type AgentPurpose,
  causeEveryKind,
  contractEventKinds,
  type EveryKindCaused,
  KIND_CAUSED_BY,
  subjectField,
} from './every-kind.js'
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
  const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v)
  for (const key of fieldsOf(real[0] ?? {})) {
    const values = real.map((r) => r[key])
    // An object every real event carries (a run's outcome, an approval's payload_preview, a denial's detail): the
    // sample's has its fields.
    if (values.every(isObject)) compare(`its ${key}`, obj(sample[key]), values.map(obj))
    // A list every real event fills (a started run's plan): the sample's is not empty.
    if (
      values.every((v) => Array.isArray(v) && v.length > 0) &&
      !(Array.isArray(sample[key]) && sample[key].length > 0)
    )
      problems.push(`its ${key} is ${short(sample[key])}, where every real one lists something`)
  }
  const statuses = new Set(real.map((r) => r.status))
  const [status] = statuses
  if (statuses.size === 1 && typeof status === 'string' && sample.status !== status)
    problems.push(`its status is ${short(sample.status)}, the real one's ${status}`)
  return problems
}

/** What each of `causeEveryKind`'s agents was made for, as a failure names it. */
const PURPOSE_SAID: Record<AgentPurpose, string> = {
  created: 'was created and deleted',
  succeeds: 'ran a task to success',
  fails: 'ran a task to failure',
  controlled: 'was paused, resumed and cancelled awaiting approval',
  denied: 'ran into the policy',
}

/** Whether a delivery's event is about what the check caused (the checks alongside cause events of every kind too). */
const aboutCaused = (caused: EveryKindCaused, approved: string) => (d: Delivery) => {
  const b = d.body ?? {}
  return (
    (typeof b.agent_id === 'string' && caused.agents.includes(b.agent_id)) ||
    b.tool_id === caused.tool ||
    b.run_id === approved
  )
}

export const testSendChecks: Check[] = [
  {
    id: 'destinations.test-sends-each-kind',
    title:
      "A destination's test send of each event kind (POST /v1/destinations/{id}/test naming the kind) answers ok and delivers one made-up event of that kind, marked test: true, shaped as the contract's delivery body of its kind (its signature aside) and naming its subject (its run, task, agent, tool or connector), with no empty string in it, and one naming no kind is of the destination's first kind; beside a real event of each kind the check causes (tools, agents, tasks and runs through every end, an approval, a pause, a denial; a batch's aside), the sample carries the real events' fields, those of every object they all carry (an outcome, a payload_preview, a detail), a list where they all fill one (a plan), and their status",
    level: 'profile',
    clauses: ['S6.5'],
    // Seventeen sends and their deliveries to the receiver: alongside the checks after it.
    overlap: true,
    async run(ctx) {
      const kinds = contractEventKinds(ctx)
      assert(kinds.length > 0, 'the contract lists no EventKind enum')
      // Every kind but ingest.batch_accepted listed, in binary mode (the body is the event): each test send names its
      // own kind, and the real events the check causes (one of each kind) arrive beside the samples. A batch's event
      // carries no object or list to compare, and listing it would bring the sink every batch of the run.
      const compared = kinds.filter((k) => k !== 'ingest.batch_accepted')
      const sink = await cloudEventsSink(ctx, 'cloudevents-test-sends', compared, () => ({
        mode: 'binary',
      }))
      // Besides one of each kind, a run resumed by its approval: a resume may name the step it was approved at, as
      // that one does and a resume after a pause does not. Caused while the samples are sent and judged.
      const causing = Promise.all([causeEveryKind(ctx), decided(ctx, 'approve')])
      // Awaited below; a sample that throws first must not leave its failure unhandled meanwhile.
      causing.catch(() => undefined)
      const problems: string[] = []
      const ids = new Set<unknown>()
      const samples = await Promise.all(
        kinds.map(async (kind) => {
          const res = await ctx.http.post(`/v1/destinations/${sink.id}/test`, { event: kind })
          expectStatus(res, 200, `a test send of ${kind}`)
          if (obj(res.body).ok !== true) {
            problems.push(`the test send of ${kind} answered ${short(res.body)}`)
            return undefined
          }
          const sent = ctx.receiver!.deliveries.filter(
            (d) => d.path.endsWith(`/${sink.tag}`) && d.body?.test === true && d.body.event === kind,
          )
          const body = sent[0]?.body
          if (sent.length !== 1 || body === undefined) {
            problems.push(`the test send of ${kind} delivered ${sent.length} samples of it, not 1`)
            return undefined
          }
          ids.add(body.id)
          for (const p of sampleProblems(ctx, kind, body)) problems.push(`the sample of ${kind}: ${p}`)
          return body
        }),
      )
      const [caused, approved] = await causing
      const ours = aboutCaused(caused, approved.runId)
      await Promise.all(
        kinds.map(async (kind, i) => {
          const body = samples[i]
          if (!body || !compared.includes(kind)) return
          const isReal = (d: Delivery) =>
            d.path.endsWith(`/${sink.tag}`) && d.body?.event === kind && d.body.test !== true
          // The check's own events of the kind, one from each thing that surely causes it (of run.resumed both the
          // pause's, naming no step, and the approval's, naming its step), and the sample compared with those alone:
          // what else of the kind arrives by then depends on timing, and a field one real event carries and another
          // not may be in the sample.
          const agentOf = (agent: string) => (d: Delivery) => d.body?.agent_id === agent
          const awaited: [string, (d: Delivery) => boolean][] = kind.startsWith('tool.')
            ? [[`the check's own ${kind}`, (d) => d.body?.tool_id === caused.tool]]
            : (KIND_CAUSED_BY[kind] ?? []).map((purpose) => [
                `the ${kind} of the agent that ${PURPOSE_SAID[purpose]}`,
                agentOf(caused.by[purpose]),
              ])
          if (kind === 'run.resumed')
            awaited.push([`the approved run's ${kind}`, (d) => d.body?.run_id === approved.runId])
          if (awaited.length === 0) awaited.push([`the check's own ${kind}`, ours])
          const seen: Record<string, unknown>[] = []
          for (const [what, which] of awaited) {
            const found = await ctx.receiver!.waitFor((d) => isReal(d) && which(d), ctx.config.waitMs)
            if (!found) {
              problems.push(`${what} did not reach the destination listing it within ${ctx.config.waitMs} ms`)
              return
            }
            seen.push(found.body ?? {})
          }
          for (const p of unlikeReal(body, seen))
            problems.push(`the sample of ${kind}, beside the real events of its kind: ${p}`)
        }),
      )
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
