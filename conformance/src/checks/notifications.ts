/**
 * What a person reads about an event in chat or in an incident. Spec §6 routes events "to chat, paging and
 * downstream systems" and shows nothing of how, so this is profile, like every destination check. It judges no
 * wording: only that each event reaches the person as a message of its own that names what the event is about and
 * what happened to it, with the facts its own webhook body gives for a decision (decisionFacts), and that the page a
 * run's approval opened is resolved once the run is cancelled. The event bodies come from a webhook subscription to
 * every kind, so the facts are those the deployment itself announced.
 */
import type { Check, CheckContext } from '../check.js'
import { decideStep, expectStatus, firstAwaitingStep } from '../fixtures.js'
import { obj } from '../http.js'
import type { Delivery } from '../receiver.js'
import { assert, skip } from '../types.js'
import { short } from '../wait.js'
import { pagerDutyEventProblems, slackMessageProblems } from './destinations/bodies.js'
import { pagerDestination, pagerResolve, pagerTrigger, slackDestination } from './destinations/index.js'
import {
  awaitKinds,
  causeEveryKind,
  contractEventKinds,
  type EveryKindCaused,
  subjectField,
} from './every-kind.js'
import { atTag, ownHook } from './webhooks.js'

/** One event as its webhook delivery announced it. */
interface Announced {
  kind: string
  body: Record<string, unknown>
}

/** A message (or incident) found for an event: the texts judged. */
interface Said {
  /** What names the event at a glance: Slack's `text` (its notification), PagerDuty's `payload.summary`. */
  glance: string
  /**
   * What a person reads as prose: the glance and every text of a Slack message's blocks; PagerDuty's summary and the
   * text of each of its links.
   */
  prose: string
  /** Everything it shows: the glance and every text of its blocks (Slack), its `custom_details` (PagerDuty). */
  whole: string
  /** A Slack message's header block, the line a reader scans first: it too says what happened. */
  header?: string | undefined
  /** A Slack message's first section sentence, read under the header: it too says what happened and to what. */
  sentence?: string | undefined
  /** The texts of a Slack message's section fields, each a labelled fact. */
  fields?: string[]
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined)

/** Every string under `key` anywhere in a Block Kit structure, in order (an object holding one is not entered). */
function blockStrings(value: unknown, key: string, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) blockStrings(v, key, out)
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      if (k === key && typeof v === 'string') out.push(v)
      else blockStrings(v, key, out)
    }
  return out
}

/** Every `text` string of a Block Kit structure (headers, sections, fields, context elements, buttons). */
const blockTexts = (value: unknown): string[] => blockStrings(value, 'text')

function slackSaid(d: Delivery): Said | undefined {
  if (!d.body) return undefined
  const blocks = blockTexts(d.body.blocks)
  const glance = text(d.body.text) ?? blocks.join('\n')
  const all = Array.isArray(d.body.blocks) ? d.body.blocks.map(obj) : []
  const header = all.length > 0 ? blockTexts(all.find((b) => b.type === 'header'))[0] : undefined
  const section = all.find((b) => b.type === 'section')
  const sentence = section ? text(obj(section.text).text) : undefined
  const fields = all.flatMap((b) =>
    b.type === 'section' && Array.isArray(b.fields) ? b.fields.map((f) => text(obj(f).text) ?? '') : [],
  )
  const whole = [glance, ...blocks].join('\n')
  return { glance, prose: whole, whole, header, sentence, fields }
}

function pagerSaid(d: Delivery): Said | undefined {
  if (d.body?.event_action !== 'trigger') return undefined
  const payload = obj(d.body.payload)
  const summary = text(payload.summary)
  if (summary === undefined) return undefined
  const details = payload.custom_details
  // What a responder reads besides the summary: the text of each link.
  const linkTexts = (Array.isArray(d.body.links) ? d.body.links : []).map((l) => text(obj(l).text) ?? '')
  return {
    glance: summary,
    prose: [summary, ...linkTexts].join('\n'),
    whole: `${summary}\n${details === undefined ? '' : JSON.stringify(details)}`,
  }
}

/**
 * Shown as written or with Slack's mrkdwn escapes (&, <, >), as a word of its own: not run into a letter or digit on
 * either side, so a count of 2 is not found in an id that holds a 2, nor step s1 in a step s12. A number is not a word
 * of an id joined by `-` or `_` either: a limit of 3 is not shown by a tool named `…-tool-succeed-3`, nor an observed
 * 4 by step `step_4`.
 */
function shows(said: string, value: string): boolean {
  const joined = /^\d+$/.test(value) ? NUMBER_JOINED : WORDLIKE
  return [value, slackEscaped(value)].some((v) => {
    for (let at = said.indexOf(v); at >= 0; at = said.indexOf(v, at + 1))
      if (!joined.test(said.charAt(at - 1)) && !joined.test(said.charAt(at + v.length))) return true
    return false
  })
}

const WORDLIKE = /[\p{L}\p{N}]/u
const NUMBER_JOINED = /[\p{L}\p{N}_-]/u

/**
 * What a program printed where a value was missing, read as a word: no person should read it in place of a fact (a
 * PagerDuty incident's custom details are JSON, where null is a value, and are not read for it).
 */
const LEAKED = /(?<![\p{L}\p{N}])(undefined|null|NaN|\[object Object\])(?![\p{L}\p{N}])/u

/** A value as Slack's mrkdwn escapes it (&, <, >). */
const slackEscaped = (value: string) =>
  value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** The word of what happened, from the kind's last part (`run.failed` → "faile", `tool.retired` → "retir"). */
const happened = (kind: string) => (kind.split(/[._]/).at(-1) ?? kind).slice(0, 5).toLowerCase()

/** What names the event's subject: the field and its value, when the body has it. */
function subject(e: Announced): [string, string] | undefined {
  const field = subjectField(e.kind)
  const value = field ? text(e.body[field]) : undefined
  return field && value ? [field, value] : undefined
}

/**
 * The facts a person deciding on the event needs, where its body gives them: an approval's step, queue and reason,
 * why a policy denied a step (the tool, the violation, what it observed and its limit, the envelope and the queue it
 * escalates to), why a run resumed, why a run failed or was cancelled (its error's code and message), and what an ingested
 * batch took and refused.
 */
function decisionFacts(e: Announced): [string, string][] {
  const facts: [string, string][] = []
  const add = (label: string, value: unknown) => {
    const v = text(value)
    if (v) facts.push([label, v])
  }
  if (e.kind === 'run.awaiting_approval') {
    add('step_id', e.body.step_id)
    add('queue', e.body.queue)
    add('reason', e.body.reason)
  }
  if (e.kind === 'policy.denied') {
    add('step_id', e.body.step_id)
    add('tool', e.body.tool)
    const detail = obj(e.body.detail)
    add('detail.violation', detail.violation)
    // What the policy saw against what it allows (docs/events.md: "the policy's violation with observed/limit"):
    // a count, a name, or each name of a list.
    for (const key of ['observed', 'limit'])
      for (const v of [detail[key]].flat()) add(`detail.${key}`, typeof v === 'number' ? String(v) : v)
    add('detail.envelope', detail.envelope)
    add('detail.escalation_queue', detail.escalation_queue)
  }
  if (e.kind === 'ingest.batch_accepted')
    for (const key of ['accepted', 'rejected']) {
      const count = e.body[key]
      if (typeof count === 'number') add(key, String(count))
    }
  if (e.kind === 'run.resumed') add('reason', e.body.reason)
  if (e.kind === 'run.failed' || e.kind === 'run.cancelled') {
    const error = obj(obj(e.body.outcome).error)
    add('outcome.error.code', error.code)
    add('outcome.error.message', error.message)
  }
  return facts
}

/**
 * What an approval puts before the person deciding on it (§6: the event carries a `payload_preview` of the pending
 * action): the tool, and unless the preview was cut short each value of its input, as far as one reads the same
 * written inside JSON (a value needing an escape may be shown either way).
 */
function pendingActionShown(e: Announced): [string, string][] {
  if (e.kind !== 'run.awaiting_approval') return []
  const preview = obj(e.body.payload_preview)
  const shown: [string, string][] = []
  const tool = text(preview.tool)
  if (tool) shown.push(['tool', tool])
  if (preview.truncated === true) return shown
  const leaves = (value: unknown, path: string): void => {
    if (typeof value === 'number') shown.push([path, String(value)])
    else if (typeof value === 'string' && value !== '' && JSON.stringify(value) === `"${value}"`)
      shown.push([path, value])
    else if (Array.isArray(value)) for (const [i, v] of value.entries()) leaves(v, `${path}[${i}]`)
    else if (value !== null && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) leaves(v, `${path}.${k}`)
  }
  leaves(preview.input, 'input')
  return shown
}

/**
 * Besides its subject, what a sentence about the event names, by kind: the step, tool, name or batch at stake, and
 * the agent whose run or task it is.
 */
const NAMED_IN_SENTENCE: Record<string, string[]> = {
  'run.awaiting_approval': ['step_id', 'agent_id'],
  'policy.denied': ['step_id', 'tool', 'agent_id'],
  ...Object.fromEntries(
    [
      'run.started',
      'run.succeeded',
      'run.failed',
      'run.paused',
      'run.resumed',
      'run.cancelled',
      'task.created',
      'task.succeeded',
      'task.failed',
      'task.cancelled',
    ].map((kind) => [kind, ['agent_id']]),
  ),
  'agent.created': ['name'],
  'agent.deleted': ['name'],
  'tool.registered': ['name'],
  'tool.retired': ['name'],
  'ingest.batch_accepted': ['batch_id'],
}

/** The body's values a sentence about `e` names: its subject's, then those NAMED_IN_SENTENCE lists. */
function namedInSentence(e: Announced): [string, string][] {
  const named: [string, string][] = []
  const about = subject(e)
  if (about) named.push(about)
  for (const field of NAMED_IN_SENTENCE[e.kind] ?? []) {
    const value = text(e.body[field])
    if (value) named.push([field, value])
  }
  return named
}

/**
 * Whether a field showing a fact also says what it is: its text with every fact value of the event taken out
 * still has a letter or digit (a label), however it is laid out.
 */
function labelled(field: string, values: string[]): boolean {
  let rest = field
  for (const v of values) rest = rest.split(v).join('').split(slackEscaped(v)).join('')
  return /[\p{L}\p{N}]/u.test(rest)
}

/**
 * Why `said` is not a message about `e` (empty: it is): its subject and what happened at a glance, in a Slack
 * message's header and in its sentence (which also names the step, tool, name or batch at stake), its facts, and
 * in a Slack message each fact shown in a field of its own with a label.
 */
function unsaid(e: Announced, said: Said): string[] {
  const missing: string[] = []
  const word = happened(e.kind)
  if (said.header !== undefined && !said.header.toLowerCase().includes(word))
    missing.push(`"${word}…" in its header`)
  const about = subject(e)
  if (about && !shows(said.glance, about[1])) missing.push(`its ${about[0]} ${about[1]}`)
  if (!said.glance.toLowerCase().includes(word)) missing.push(`"${word}…"`)
  const leaked = LEAKED.exec(said.prose)?.[0]
  if (leaked !== undefined) missing.push(`no "${leaked}" where a person reads it`)
  if (said.sentence !== undefined) {
    if (!said.sentence.toLowerCase().includes(word)) missing.push(`"${word}…" in its sentence`)
    // A sentence for a person says what happened in words, not in the event's code.
    if (said.sentence.includes(e.kind)) missing.push(`a sentence that says "${e.kind}" in words`)
    for (const [field, value] of namedInSentence(e))
      if (!shows(said.sentence, value)) missing.push(`its ${field} ${value} in its sentence`)
  }
  for (const [what, value] of pendingActionShown(e))
    if (!shows(said.whole, value)) missing.push(`its pending action's ${what} ${value}`)
  const facts = decisionFacts(e)
  const values = facts.map(([, v]) => v)
  for (const [label, value] of facts) {
    if (!shows(said.whole, value)) missing.push(`its ${label} ${value}`)
    else if (said.fields !== undefined) {
      const field = said.fields.find((f) => shows(f, value))
      if (field === undefined) missing.push(`a field showing its ${label} ${value}`)
      else if (!labelled(field, values)) missing.push(`a label on the field showing its ${label} ${value}`)
    }
  }
  return missing
}

/** The kinds that ask a person to act, or tell of a failure: their messages must stand out in a channel. */
const ATTENTION = ['run.awaiting_approval', 'policy.denied', 'run.failed', 'task.failed']
/** The kinds that only inform. */
const INFORMATIONAL = /^(agent|tool|ingest)\./
/** A Slack header's leading emoji: Slack's `:name:`, or the character itself. */
const LEADING_EMOJI = /^(?::[a-z0-9_+'-]+:|\p{Extended_Pictographic}\uFE0F?)/u

/**
 * How a channel's headers read at a glance: each Slack header starts with an emoji, and those of the kinds that ask a
 * person to act or tell of a failure are never one an informational kind's header shows. A problem sentence, or
 * undefined.
 */
function headerMarks(
  events: Announced[],
  messages: Said[],
  fits: (e: Announced, s: Said) => boolean,
): string | undefined {
  // Each event's messages matched once: the leading emoji of every header that fits it ('' where there is none).
  const emoji = new Map(
    events.map((e) => [
      e,
      messages
        .filter((s) => s.header !== undefined && fits(e, s))
        .map((s) => LEADING_EMOJI.exec(s.header ?? '')?.[0] ?? ''),
    ]),
  )
  const emojiOf = (e: Announced): string[] => emoji.get(e) ?? []
  const bare = events.filter((e) => emojiOf(e).includes(''))
  if (bare.length > 0)
    return `the Slack headers of ${[...new Set(bare.map((e) => e.kind))].join(', ')} start with no emoji (:name: or the character) to tell them apart at a glance`
  const informational = new Set(events.filter((e) => INFORMATIONAL.test(e.kind)).flatMap(emojiOf))
  const alike = events.filter(
    (e) => ATTENTION.includes(e.kind) && emojiOf(e).some((m) => informational.has(m)),
  )
  return alike.length > 0
    ? `the Slack headers of ${[...new Set(alike.map((e) => e.kind))].join(', ')}, which ask a person to act or tell of a failure, start with the emoji an informational kind's header shows (${[...informational].join(' ')})`
    : undefined
}

/**
 * A message of its own for each event: a maximum matching of events to the messages about them (two events about
 * one run, say, are never both answered by one message). Answers the events left without one.
 */
function unmatched(
  events: Announced[],
  messages: Said[],
  fits: (e: Announced, s: Said) => boolean,
): Announced[] {
  const taken = new Map<number, number>()
  const options = events.map((e) => messages.flatMap((s, i) => (fits(e, s) ? [i] : [])))
  const place = (ev: number, seen: Set<number>): boolean => {
    for (const m of options[ev] ?? []) {
      if (seen.has(m)) continue
      seen.add(m)
      const holder = taken.get(m)
      if (holder === undefined || place(holder, seen)) {
        taken.set(m, ev)
        return true
      }
    }
    return false
  }
  return events.filter((_, ev) => !place(ev, new Set()))
}

/** The event's own delivery body, when it concerns what `caused` made. */
function ours(d: Delivery, caused: EveryKindCaused): boolean {
  const b = d.body ?? {}
  return (
    (typeof b.agent_id === 'string' && caused.agents.includes(b.agent_id)) ||
    b.tool_id === caused.tool ||
    b.connector_id === caused.connector
  )
}

/**
 * The incident a run's approval opened at a destination paging for approvals is resolved once that run is cancelled
 * (PagerDuty's `resolve` with the trigger's `dedup_key`): a problem sentence, or undefined (also when no run of
 * `events` both awaited approval and was cancelled).
 */
async function resolvedOnCancel(
  ctx: CheckContext,
  events: Announced[],
  tag: string,
): Promise<string | undefined> {
  const runId = events.find(
    (e) =>
      e.kind === 'run.awaiting_approval' &&
      events.some((c) => c.kind === 'run.cancelled' && c.body.run_id === e.body.run_id),
  )?.body.run_id
  if (typeof runId !== 'string') return undefined
  const trigger = await ctx.receiver!.waitFor(pagerTrigger(tag, runId), ctx.config.waitMs)
  if (!trigger)
    return `a pagerduty destination listing run.awaiting_approval opened no incident naming run ${runId}, which awaited approval, within ${ctx.config.waitMs} ms`
  const key = trigger.body?.dedup_key
  if (typeof key !== 'string')
    return `the incident run ${runId}'s approval opened has no dedup_key: nothing can resolve it`
  const resolve = await ctx.receiver!.waitFor(pagerResolve(tag, key), ctx.config.waitMs)
  return resolve
    ? undefined
    : `run ${runId} was cancelled, but the incident its approval opened (dedup_key ${key}) was not resolved within ${ctx.config.waitMs} ms`
}

/**
 * The incident a run's approval opened stays open while the run is paused and resumed (the step still waits), and is
 * resolved once the step is approved (PagerDuty's `resolve` with the trigger's `dedup_key`): a problem sentence, or
 * undefined.
 */
async function resolvedOnApproval(ctx: CheckContext, tag: string): Promise<string | undefined> {
  const opened = async () => {
    const { runId, waiting } = await ctx.fx.awaitingRun()
    const trigger = await ctx.receiver!.waitFor(pagerTrigger(tag, runId), ctx.config.waitMs)
    const stepId = firstAwaitingStep(waiting)
    return { runId, stepId, key: trigger?.body?.dedup_key }
  }
  const run = await opened()
  if (run.key === undefined)
    return `a pagerduty destination listing run.awaiting_approval opened no incident with a dedup_key naming run ${run.runId}, which awaited approval, within ${ctx.config.waitMs} ms`
  for (const action of ['pause', 'resume'])
    expectStatus(await ctx.http.post(`/v1/runs/${run.runId}/${action}`), 200, `${action} of run ${run.runId}`)
  // Another run's approval, announced after the pause and the resume: once its incident is open, a resolve either
  // of them made would have come before it (a destination gets one attempt at a time, the oldest first).
  const later = await opened()
  if (later.key === undefined)
    return `a pagerduty destination listing run.awaiting_approval opened no incident naming run ${later.runId} within ${ctx.config.waitMs} ms`
  if (ctx.receiver!.deliveries.some(pagerResolve(tag, run.key)))
    return `the incident run ${run.runId}'s approval opened was resolved by a pause and a resume, while its step still waits for a person`
  expectStatus(await decideStep(ctx, run.runId, run.stepId, 'approve'), 200, `approving step ${run.stepId}`)
  const resolve = await ctx.receiver!.waitFor(pagerResolve(tag, run.key), ctx.config.waitMs)
  return resolve
    ? undefined
    : `step ${run.stepId} of run ${run.runId} was approved, but the incident its approval opened (dedup_key ${String(run.key)}) was not resolved within ${ctx.config.waitMs} ms`
}

/** Every link a Slack message carries: mrkdwn's `<url>` and `<url|label>` in its texts, and any block's `url`. */
function slackLinks(body: unknown): string[] {
  const links: string[] = []
  for (const t of [obj(body).text, ...blockTexts(obj(body).blocks)])
    if (typeof t === 'string') for (const m of t.matchAll(/<([^<>|]+)(?:\|[^<>]*)?>/g)) links.push(m[1] ?? '')
  return [...links, ...blockStrings(obj(body).blocks, 'url')]
}

/**
 * The links a PagerDuty Events API v2 trigger lists (`links[].href`, what the incident shows a responder as links),
 * and its `client_url` (the sending client's page), which may link the run too but does not stand for the list.
 */
function pagerLinks(body: unknown): { listed: string[]; all: string[] } {
  const b = obj(body)
  const listed = (Array.isArray(b.links) ? b.links.map((l) => obj(l).href) : []).filter(
    (v): v is string => typeof v === 'string',
  )
  return { listed, all: typeof b.client_url === 'string' ? [...listed, b.client_url] : listed }
}

export const notificationChecks: Check[] = [
  {
    id: 'destinations.messages-link-the-run',
    title:
      "Where the deployment declares where a person opens a run (destinations.runLink), a Slack message and a PagerDuty incident about a run that awaits approval link to that run there (a link in the Slack message, an entry of the incident's links), and to no other run",
    level: 'profile',
    clauses: ['S6.5'],
    async run(ctx) {
      // The reference links a run's messages to <AGENTOPS_PUBLIC_URL>/v1/runs/{run_id} when its operator sets the
      // public URL; --reference sets it and declares the link. Where a link goes is the deployment's own choice.
      const template = ctx.config.runLink
      if (!template) skip("no run link declared (the config file's destinations.runLink)")
      const slack = await slackDestination(ctx, ['run.awaiting_approval'], 'slack-run-links')
      const pager = await pagerDestination(ctx, ['run.awaiting_approval'], 'pagerduty-run-links')
      const { runId } = await ctx.fx.awaitingRun()
      const link = template.replaceAll('{run_id}', encodeURIComponent(runId))
      // A link of the declared form to another run's id: the message sends the person to the wrong run.
      const form = new RegExp(
        `^${template
          .split('{run_id}')
          .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('[^/?#]+')}$`,
      )
      const other = (links: string[]) => links.filter((l) => l !== link && form.test(l))
      const wait = ctx.config.waitMs
      const problems: string[] = []
      const message = await ctx.receiver!.waitFor((d) => atTag(slack.tag)(d) && d.raw.includes(runId), wait)
      if (!message) problems.push(`no Slack message about run ${runId} arrived within ${wait} ms`)
      else {
        const links = slackLinks(message.body)
        if (!links.includes(link))
          problems.push(
            `the Slack message about run ${runId} does not link to ${link}${links.length > 0 ? ` (its links: ${links.join(', ')})` : ' (it has no link)'}`,
          )
        if (other(links).length > 0)
          problems.push(`the Slack message about run ${runId} links to ${other(links).join(', ')}`)
      }
      const incident = await ctx.receiver!.waitFor(pagerTrigger(pager.tag, runId), wait)
      if (!incident) problems.push(`no PagerDuty incident about run ${runId} was triggered within ${wait} ms`)
      else {
        const { listed, all } = pagerLinks(incident.body)
        if (!listed.includes(link))
          problems.push(
            `the PagerDuty incident about run ${runId} lists no link to ${link} in links[].href${all.length > 0 ? ` (its links: ${all.join(', ')})` : ' (it has no links)'}`,
          )
        if (other(all).length > 0)
          problems.push(`the PagerDuty incident about run ${runId} links to ${other(all).join(', ')}`)
      }
      assert(problems.length === 0, problems.join('; '))
    },
  },
  {
    id: 'destinations.chat-and-paging-say-what-happened',
    title:
      "A slack and a pagerduty destination listing every event kind get, for each event, a message (an incident) of its own whose glance (Slack's text and header, PagerDuty's summary) names what the event is about (its run, task, agent, tool or connector) and what happened to it (the kind's word: started, retired, accepted…), as does a Slack message's sentence under its header (which also names the step, tool, name or batch at stake, and the agent whose run or task it is), with the facts its body gives for a decision (an approval's step, queue and reason, and its pending action's tool and input values; why a policy denied a step's tool, with what it observed and its limit, its envelope and escalation queue; why a run resumed, failed or was cancelled, its agent's deletion included; what a batch took and refused), each in a Slack message a field with a label, a number never taken from an id it is part of; nothing a person reads shows undefined, null, NaN or [object Object] in place of a value, nor a sentence the event's code in place of words; each Slack header starts with an emoji, an approval's, a denial's and a failure's never one an agent, tool or batch message shows; the incident a run's approval opened is resolved once the run is cancelled, and another's stays open through a pause and a resume of its run and is resolved once its step is approved",
    level: 'profile',
    clauses: ['S6.5'],
    // It mostly waits for the runs it started and the messages they cause.
    overlap: true,
    async run(ctx) {
      const kinds = contractEventKinds(ctx)
      const slack = await slackDestination(ctx, kinds, 'slack-every-kind')
      const pager = await pagerDestination(ctx, kinds, 'pagerduty-every-kind')
      // One that pages for approvals only: the page a cancelled run's approval opened is resolved.
      const approvals = await pagerDestination(ctx, ['run.awaiting_approval'], 'pagerduty-approvals')
      const hook = await ownHook(ctx, 'dest-every-kind', kinds, { what: 'subscribing to every event kind' })
      // Only for this check: listing every kind, they would also get every event of the checks after it.
      const stop = async () => {
        for (const id of [slack.id, pager.id, approvals.id]) await ctx.http.delete(`/v1/destinations/${id}`)
        if (hook.id) await ctx.http.delete(`/v1/webhooks/${hook.id}`)
      }
      try {
        const caused = await causeEveryKind(ctx)
        const announced = (d: Delivery) => hook.mine(d) && ours(d, caused)
        const missing = await awaitKinds(ctx, kinds, announced)
        if (missing.length > 0)
          ctx.partial(
            `no webhook delivery of ${missing.join(', ')} reached the subscription to every kind within ${ctx.config.waitMs} ms, so their messages were not judged`,
          )
        // The run whose agent was deleted ends in its own time (§2: deleting "terminates" the agent): its end is judged
        // once announced, whatever else arrived first.
        const orphanEnded = await ctx.receiver!.waitFor(
          (d) =>
            announced(d) &&
            d.body?.agent_id === caused.orphaned &&
            (d.body.event === 'run.cancelled' || d.body.event === 'run.failed'),
          ctx.config.waitMs,
        )
        if (!orphanEnded)
          ctx.partial(
            `no webhook delivery announced the end of the run whose agent ${caused.orphaned} was deleted within ${ctx.config.waitMs} ms, so its message was not judged`,
          )
        const byId = new Map<string, Announced>()
        for (const d of ctx.receiver!.deliveries)
          if (announced(d) && typeof d.body?.id === 'string' && typeof d.body.event === 'string')
            byId.set(d.body.id, { kind: d.body.event, body: d.body })
        const events = [...byId.values()].filter((e) => kinds.includes(e.kind))
        const destinations = [
          // Slack's headers are a channel's lines at a glance: theirs are judged together (headerMarks).
          {
            name: 'Slack message',
            tag: slack.tag,
            said: slackSaid,
            shape: slackMessageProblems,
            headers: true,
          },
          {
            name: 'PagerDuty incident',
            headers: false,
            tag: pager.tag,
            said: pagerSaid,
            shape: (d: Delivery) => pagerDutyEventProblems(d, pager.secret),
          },
        ]
        const problems: string[] = []
        // One wait for both destinations: the same events caused their messages at the same moment, so each gets
        // the whole wait from then, and a deployment that sends neither is judged after one wait, not two.
        const deadline = Date.now() + ctx.config.waitMs
        for (const dest of destinations) {
          const at = atTag(dest.tag)
          const fits = (e: Announced, s: Said) => unsaid(e, s).length === 0
          let left = events
          let messages: Said[] = []
          const seen = new Set<Delivery>()
          for (;;) {
            const arrived = ctx.receiver!.deliveries.filter(at)
            for (const d of arrived) seen.add(d)
            messages = arrived.flatMap((d) => dest.said(d) ?? [])
            left = unmatched(events, messages, fits)
            if (left.length === 0 || Date.now() >= deadline) break
            await ctx.receiver!.waitFor((d) => at(d) && !seen.has(d), deadline - Date.now())
          }
          for (const d of seen) {
            const shape = dest.shape(d)
            if (shape.length > 0) problems.push(`a ${dest.name}: ${shape.join('; ')}`)
          }
          if (dest.headers) {
            const marks = headerMarks(events, messages, fits)
            if (marks) problems.push(marks)
          }
          for (const e of left) {
            // The closest message about the same subject says what is missing from it.
            const about = subject(e)
            const near = messages
              .filter((s) => about && shows(s.whole, about[1]))
              .sort((a, b) => unsaid(e, a).length - unsaid(e, b).length)[0]
            problems.push(
              near
                ? `${e.kind} (event ${short(e.body.id)}) has no ${dest.name} of its own: the nearest one lacks ${unsaid(e, near).join(', ') || 'nothing, but another event took it'}: ${short(near.glance, 200)}`
                : `${e.kind} (event ${short(e.body.id)}) has no ${dest.name} naming its ${about?.[0] ?? 'subject'} within ${ctx.config.waitMs} ms`,
            )
          }
        }
        const resolved = await resolvedOnCancel(ctx, events, approvals.tag)
        if (resolved) problems.push(resolved)
        const approved = await resolvedOnApproval(ctx, approvals.tag)
        if (approved) problems.push(approved)
        assert(problems.length === 0, [...new Set(problems)].join('; '))
      } finally {
        await stop()
      }
    },
  },
]
