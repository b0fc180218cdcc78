/**
 * "Send a test": the made-up event an operator sends after configuring a destination, to see what will arrive. The
 * reference profile's `POST /v1/destinations/{id}/test` (an extension: spec §6 routes events to destinations and shows
 * nothing of testing them). A sample is worth sending only if it looks like the real thing: the delivery body the
 * contract documents for its kind, naming a subject as the real event does, and marked so no one acts on it.
 */
import type { Check, CheckContext } from '../check.js'
import { expectStatus } from '../fixtures.js'
import { obj } from '../http.js'
import { assert } from '../types.js'
import { short } from '../wait.js'
import { cloudEventsSink } from './destinations.js'
import { contractEventKinds, subjectField } from './every-kind.js'

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

export const testSendChecks: Check[] = [
  {
    id: 'destinations.test-sends-each-kind',
    title:
      "A destination's test send of each event kind (POST /v1/destinations/{id}/test naming the kind) answers ok and delivers one made-up event of that kind, marked test: true, shaped as the contract's delivery body of its kind (its signature aside) and naming its subject (its run, task, agent, tool or connector), with no empty string in it",
    level: 'profile',
    clauses: ['S6.5'],
    // Seventeen sends and their deliveries to the receiver: alongside the checks after it.
    overlap: true,
    async run(ctx) {
      const kinds = contractEventKinds(ctx)
      assert(kinds.length > 0, 'the contract lists no EventKind enum')
      // One kind listed (seldom caused by the checks alongside), in binary mode (the body is the event): each test
      // send names its own kind.
      const sink = await cloudEventsSink(ctx, 'cloudevents-test-sends', ['tool.retired'], () => ({
        mode: 'binary',
      }))
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
      }
      if (problems.length === 0 && ids.size !== kinds.length)
        problems.push(`${kinds.length} samples carried ${ids.size} ids: each is an event of its own`)
      assert(problems.length === 0, problems.join('; '))
    },
  },
]
