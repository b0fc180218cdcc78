/**
 * Resources the checks share, created on first use with run-unique names and undone at the end. Checks that need
 * a fresh resource (to pause it, cancel it, retire it) ask for a new one.
 */
import type { CheckContext } from './check.js'
import { declaredAbsent, type ToolHint } from './config.js'
import { type HttpClient, type HttpResponse, obj } from './http.js'
import { RunStatuses } from './run-statuses.js'
import { fill, specRunBody, type ToolRef } from './toolrun.js'
import { CheckFailure, fail, skip } from './types.js'
import { short, waitUntil } from './wait.js'

export type Json = Record<string, unknown>

/** Fails unless the status is one of `expected`, showing the body. */
export function expectStatus(res: HttpResponse, expected: number | number[], what: string): void {
  const list = Array.isArray(expected) ? expected : [expected]
  if (!list.includes(res.status)) {
    throw new CheckFailure(`${what}: expected ${list.join(' or ')}, got ${res.status} ${short(res.body)}`)
  }
}

/** The URL that decides `stepId` of `runId`, from the approval path the deployment declares (`approval` in --config). */
export function approvalUrl(ctx: CheckContext, runId: string, stepId: string): string {
  return ctx.config.approval.path.split('{run_id}').join(runId).split('{step_id}').join(stepId)
}

/** Decides a step with `{decision}` the way the deployment declares its approval request; the answer, whatever it is. */
export function decideStep(
  ctx: CheckContext,
  runId: string,
  stepId: string,
  decision: string,
  client: HttpClient = ctx.http,
): Promise<HttpResponse> {
  return client.request(ctx.config.approval.method, approvalUrl(ctx, runId, stepId), { body: { decision } })
}

/**
 * Whether an answer says the endpoint is not served at all. Core checks use this for the reference profile's
 * extension endpoints (the agent list, a connector's records): where a deployment lacks one, the assertion that
 * needs it is left out instead of failing a foreign implementation on a profile choice.
 */
export function notServed(res: HttpResponse): boolean {
  return res.status === 404 || res.status === 405 || res.status === 501
}

/**
 * A part of a check that goes through an operation a deployment may not serve (`METHOD /template`, e.g. the agent
 * list): true when `res` says it is not served, and then the check is `partial` with `part` as the reason, unless
 * the deployment declares the operation absent (`notServed` in --config), knowingly giving that part up.
 */
export function unservedPart(ctx: CheckContext, res: HttpResponse, operation: string, part: string): boolean {
  if (!notServed(res)) return false
  if (!declaredAbsent(ctx.config, operation))
    ctx.partial(
      `${part} did not run: ${operation} answered ${res.status} (list "${operation}" in notServed in --config if the deployment does not serve it)`,
    )
  return true
}

/**
 * The items of a list answer. Spec §8: "The response field that carries the next cursor: not shown", and no
 * page shape is shown either, so the key is the declared one (`paging.itemsField`), else `data`, `items`,
 * `results`, the first array property, or the body itself when it is an array.
 */
export function pageItems(body: unknown, field?: string): unknown[] | undefined {
  if (Array.isArray(body)) return body
  const o = obj(body)
  if (field !== undefined) return Array.isArray(o[field]) ? (o[field] as unknown[]) : undefined
  for (const key of ['data', 'items', 'results']) if (Array.isArray(o[key])) return o[key] as unknown[]
  const firstArray = Object.values(o).find(Array.isArray)
  return firstArray as unknown[] | undefined
}

/** The `cursor` query parameter of a next-page URL or path, or the value itself when it is no URL. */
function cursorOf(value: string): string {
  if (!/[?&]cursor=/.test(value)) return value
  try {
    return new URL(value, 'http://x').searchParams.get('cursor') ?? value
  } catch {
    return value
  }
}

/** Names the next cursor goes by in the APIs people copy (spec §8 leaves it open). */
const CURSOR_FIELDS = ['next_cursor', 'nextCursor', 'next_page_token', 'nextPageToken', 'next']

/**
 * The next cursor of a list answer: the declared field (`paging.cursorField`, dotted for nested), else a known
 * name (`next_cursor`, `next_page_token`, `next`...), any field naming a cursor, or `Link: <...>; rel="next"`.
 * null when the answer says there is no next page; undefined when it says nothing the suite recognises.
 */
export function nextCursor(
  body: unknown,
  headers: Record<string, string> = {},
  field?: string,
): string | null | undefined {
  const o = obj(body)
  const read = (v: unknown) => (typeof v === 'string' && v !== '' ? cursorOf(v) : null)
  if (field !== undefined) {
    let node: unknown = o
    for (const part of field.split('.')) node = obj(node)[part]
    return read(node)
  }
  for (const key of CURSOR_FIELDS)
    if (key in o && (o[key] === null || typeof o[key] === 'string')) return read(o[key])
  const key = Object.keys(o).find((k) => /cursor|page_?token/i.test(k))
  if (key !== undefined && (o[key] === null || typeof o[key] === 'string')) return read(o[key])
  const meta = Object.values(o).find(
    (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && nextCursor(v) !== undefined,
  )
  if (meta !== undefined) return nextCursor(meta)
  const link = /<([^>]+)>\s*;\s*rel="?next"?/i.exec(headers.link ?? '')
  if (link) return cursorOf(link[1]!)
  return headers.link !== undefined || Object.keys(o).some((k) => /^(has_more|hasMore)$/.test(k))
    ? null
    : undefined
}

/** A list answer as the config says to read it: its items and its next cursor. */
export function listPage(
  ctx: CheckContext,
  res: HttpResponse,
): { items: unknown[] | undefined; next: string | null | undefined } {
  const { cursorField, itemsField } = ctx.config.paging
  return { items: pageItems(res.body, itemsField), next: nextCursor(res.body, res.headers, cursorField) }
}

/**
 * The next cursor of a list page, or null on its last page. A full page (as many items as `limit` asked for) that
 * names no next cursor the suite recognises is most likely the suite's reading, not the deployment's paging:
 * stopping there would blame the deployment for items it pages under a field the suite does not know. That fails
 * saying where the suite looked and which setting declares the field.
 */
export function nextPageCursor(
  ctx: CheckContext,
  res: HttpResponse,
  limit: number,
  what: string,
): string | null {
  const { items, next } = listPage(ctx, res)
  const full = items !== undefined && items.length >= limit
  const declared = ctx.config.paging.cursorField
  if (declared !== undefined) {
    if (full && next === null && !fieldPresent(res.body, declared))
      fail(
        `${what}: a full page (${items!.length} items for limit=${limit}) has no field "${declared}", the next-cursor field declared by paging.cursorField in --config; the answer's fields are ${fieldList(res.body)}. Correct paging.cursorField (dotted for a nested field), or leave it out to let the suite look for one`,
      )
    return next ?? null
  }
  if (next !== undefined) return next
  if (full)
    fail(
      `${what}: a full page (${items!.length} items for limit=${limit}) names no next cursor the suite recognises: it looked for the fields ${CURSOR_FIELDS.join(', ')}, any field naming a cursor or page token (also one level down), and a Link: <...>; rel="next" header, and found none among ${fieldList(res.body)}. The spec leaves the field's name open: declare it with paging.cursorField in --config (dotted for a nested field)`,
    )
  return null
}

function fieldPresent(body: unknown, dotted: string): boolean {
  let node: unknown = body
  for (const part of dotted.split('.')) {
    const o = obj(node)
    if (!(part in o)) return false
    node = o[part]
  }
  return true
}

function fieldList(body: unknown): string {
  const keys = Object.keys(obj(body))
  return keys.length === 0 ? '(no fields)' : keys.map((k) => `"${k}"`).join(', ')
}

/** The step a run awaits approval for first (`awaiting[0].step_id`), as text ("undefined" when it awaits none). */
export function firstAwaitingStep(run: Json): string {
  return String(obj((run.awaiting as unknown[] | undefined)?.[0]).step_id)
}

export interface StartedRun {
  runId: string
  agentId: string
  start: HttpResponse
}

/** An agent made to call tools the way the config declares (`toolRun`): its runs' plans call `tools`. */
export interface ToolAgent {
  id: string
  tools: ToolRef[]
  /** The name and behaviour it was created with ("{name}" and "{behavior}" in the run body too). */
  name: string
  behavior: string
}

export class Fixtures {
  private memo = new Map<string, Promise<unknown>>()

  constructor(private readonly ctx: () => CheckContext) {}

  private once<T>(key: string, make: () => Promise<T>): Promise<T> {
    let p = this.memo.get(key) as Promise<T> | undefined
    if (!p) {
      p = make()
      this.memo.set(key, p)
      // A failed setup is retried by the next check rather than failing every later one the same way.
      p.catch(() => this.memo.delete(key))
    }
    return p
  }

  private get http(): HttpClient {
    return this.ctx().http
  }

  /** Registers a tool with the given provider hint; retired at the end. */
  async newTool(
    kind: 'succeed' | 'fail' | 'slow',
    options: { idempotent?: boolean; requiredScopes?: string[]; envelope?: string } = {},
  ): Promise<{ id: string; name: string }> {
    const ctx = this.ctx()
    const hint: ToolHint = ctx.config.profile.tools[kind]
    const name = ctx.name(`tool-${kind}`)
    const res = await this.http.post('/v1/tools', toolRegistration(ctx, kind, name, options))
    if (res.status >= 300) {
      // A refused registration is usually the suite's hint, not the deployment: say which setting to change.
      const hintAdvice =
        res.status >= 400 && res.status < 500 && res.status !== 429
          ? `; the provider is the suite's profile hint profile.tools.${kind} (--config): if this deployment has no such provider, set profile.tools.${kind}.provider (and .config) to one it accepts`
          : ''
      fail(
        `registering a ${kind} tool (${hint.provider}) answered ${res.status} ${short(res.body)}${hintAdvice}`,
      )
    }
    const id = toolId(res.body)
    if (!id) fail(`tool registration answered no identifier: ${short(res.body)}`)
    ctx.cleanup(`retire tool ${name}`, (http) => http.delete(`/v1/tools/${id}`))
    return { id, name }
  }

  tool(kind: 'succeed' | 'fail' | 'slow'): Promise<{ id: string; name: string }> {
    return this.once(`tool:${kind}`, () => this.newTool(kind))
  }

  /** Creates an agent with the spec's fields only; deleted at the end. Its runs call no tool of the suite's. */
  async newAgent(behavior = 'autonomous', capabilities: string[] = []): Promise<string> {
    return this.createAgent({ name: this.ctx().name('agent'), behavior, capabilities })
  }

  private async createAgent(body: Json, client: HttpClient = this.http): Promise<string> {
    const ctx = this.ctx()
    const res = await client.post('/v1/agents', body)
    if (res.status >= 300) fail(`creating an agent answered ${res.status} ${short(res.body)}`)
    const id = obj(res.body).agent_id ?? obj(res.body).id
    if (typeof id !== 'string') fail(`agent creation answered no agent_id: ${short(res.body)}`)
    ctx.cleanup(`delete agent ${String(body.name ?? id)}`, (http) =>
      http.withToken(client.token).delete(`/v1/agents/${id}`),
    )
    return id
  }

  /**
   * An agent whose runs call `tools` in that order (repeats kept), made with the declared agent body (`toolRun.agent`
   * in --config; by default one whose capabilities name the tools).
   */
  async newToolAgent(
    tools: ToolRef[],
    behavior = 'autonomous',
    client: HttpClient = this.http,
  ): Promise<ToolAgent> {
    const ctx = this.ctx()
    const name = ctx.name('agent')
    const body = fill(ctx.config.toolRun.agent, { name, behavior, tools }) as Json
    return { id: await this.createAgent(body, client), tools, name, behavior }
  }

  /**
   * A fresh agent whose plan is `steps` calls of the slow tool: its run stays running for about `steps` times the
   * slow tool's delay (what a check that pauses, cancels or follows a running run needs).
   */
  async slowAgent(steps: number): Promise<ToolAgent> {
    const slow = await this.tool('slow')
    return this.newToolAgent(Array.from({ length: steps }, () => slow))
  }

  agent(): Promise<string> {
    return this.once('agent', () => this.newAgent())
  }

  /**
   * Starts a run; the start answer is kept for the checks that look at it. A tool agent's run is started with the
   * declared run body (`toolRun.run`), any other with the spec's example body; `extra` sets top-level spec fields
   * (a `trace_level`) on either.
   */
  async startRun(
    agent: string | ToolAgent,
    extra: Json = {},
    client: HttpClient = this.http,
  ): Promise<StartedRun> {
    const agentId = typeof agent === 'string' ? agent : agent.id
    const res = await this.sendRunStart(agent, extra, client)
    if (res.status >= 300) fail(`starting a run answered ${res.status} ${short(res.body)}`)
    const runId = obj(res.body).run_id
    if (typeof runId !== 'string') fail(`run start answered no run_id: ${short(res.body)}`)
    return { runId, agentId, start: res }
  }

  /** The run start request of `startRun`, its answer whatever it is (for the checks that expect a refusal). */
  sendRunStart(
    agent: string | ToolAgent,
    extra: Json = {},
    client: HttpClient = this.http,
  ): Promise<HttpResponse> {
    const agentId = typeof agent === 'string' ? agent : agent.id
    const base =
      typeof agent === 'string' ? specRunBody() : (fill(this.ctx().config.toolRun.run, agent) as Json)
    return client.post(`/v1/agents/${agentId}/runs`, { ...base, ...extra })
  }

  async inspect(runId: string, client: HttpClient = this.http): Promise<Json> {
    const res = await client.get(`/v1/runs/${runId}`)
    expectStatus(res, 200, `GET /v1/runs/${runId}`)
    return obj(res.body)
  }

  /** The deployment's run statuses (`runStatuses` in --config, else the reference profile's names). */
  get statuses(): RunStatuses {
    return new RunStatuses(this.ctx().config.runStatuses)
  }

  /**
   * The run once `accept` holds for it (waited for within --wait-ms). A run still in a status the suite cannot
   * place when the wait ends skips the check (naming the setting) instead of failing it: the wait may have been
   * for a name the deployment does not use. Such a status is remembered, so a later wait that meets it skips at
   * once instead of spending the wait (and the request budget) again.
   */
  async waitForStatus(
    runId: string,
    accept: (status: string, run: Json) => boolean,
    what: string,
  ): Promise<Json> {
    let last: Json | undefined
    const unplaced = (run: Json) => !this.statuses.known(run.status)
    try {
      return await waitUntil(
        `run ${runId} to be ${what}`,
        async () => {
          last = await this.inspect(runId)
          return last
        },
        (run) => {
          if (accept(String(run.status), run)) return true
          if (unplaced(run) && this.unplacedSeen.has(String(run.status)))
            skip(this.statuses.unknownReason(run.status, runId))
          return false
        },
        this.ctx().config.waitMs,
      )
    } catch (err) {
      if (err instanceof CheckFailure && last && unplaced(last)) {
        this.unplacedSeen.add(String(last.status))
        skip(this.statuses.unknownReason(last.status, runId))
      }
      throw err
    }
  }
  /** Statuses the suite could not place that a run stayed in for a whole wait. */
  private readonly unplacedSeen = new Set<string>()

  /**
   * The run once it ended, or once it awaits approval for a step none of `decided` names: the next approval of a run
   * of several, after the ones decided (waited for within --wait-ms).
   */
  awaitingAnotherStep(runId: string, decided: readonly string[], what: string): Promise<Json> {
    return this.waitForStatus(
      runId,
      (s, run) =>
        this.statuses.terminal(s) || (s === 'awaiting_approval' && !decided.includes(firstAwaitingStep(run))),
      what,
    )
  }

  /** An autonomous run over two succeeding tools, waited until terminal. */
  completedRun(): Promise<StartedRun & { final: Json }> {
    return this.once('completedRun', async () => {
      const [a, b] = [await this.tool('succeed'), await this.newTool('succeed')]
      const run = await this.startRun(await this.newToolAgent([a, b]))
      const final = await this.waitForStatus(run.runId, (s) => this.statuses.terminal(s), 'terminal')
      return { ...run, final, tools: [a, b] }
    })
  }

  /**
   * A fresh run of an approval-requiring agent, waited until it awaits approval. `inputs` adds fields to the run
   * body's `inputs` (what its step's input, and so its pending action, carries) where that body has them.
   */
  async awaitingRun(inputs: Json = {}): Promise<StartedRun & { waiting: Json }> {
    const tool = await this.tool('succeed')
    const agent = await this.newToolAgent([tool], this.ctx().config.profile.approvalBehavior)
    const base = obj(fill(this.ctx().config.toolRun.run, agent))
    const declared = base.inputs
    const run = await this.startRun(
      agent,
      Object.keys(inputs).length > 0 &&
        typeof declared === 'object' &&
        declared !== null &&
        !Array.isArray(declared)
        ? { inputs: { ...declared, ...inputs } }
        : {},
    )
    let waiting: Json
    try {
      waiting = await this.waitForStatus(run.runId, (s) => this.statuses.settled(s), 'awaiting approval')
    } catch (err) {
      skip(
        `could not bring a run to awaiting_approval with behavior "${this.ctx().config.profile.approvalBehavior}" (set profile.approvalBehavior in the --config file, and toolRun if this deployment's runs call their tools another way): ${(err as Error).message}`,
      )
    }
    if (waiting.status !== 'awaiting_approval') {
      skip(
        `${/^[aeiou]/i.test(this.ctx().config.profile.approvalBehavior) ? 'an' : 'a'} ${this.ctx().config.profile.approvalBehavior} run settled as ${String(waiting.status)}, not awaiting_approval (set profile.approvalBehavior in the --config file; if its runs called no tool, declare how to make them call one with toolRun)`,
      )
    }
    return { ...run, waiting }
  }

  /**
   * The frames of a run's trace once `shows` holds for them, or as they read when --wait-ms has passed (the caller
   * judges what it got): frames a deployment writes a moment after the status it answered are waited for.
   */
  async traceShowing(runId: string, what: string, shows: (frames: Json[]) => boolean): Promise<Json[]> {
    const trace = await waitUntil(
      `the trace of run ${runId} to list ${what}`,
      () => this.readTrace(runId),
      (t) => shows(t.frames),
      this.ctx().config.waitMs,
    ).catch(() => this.readTrace(runId))
    return trace.frames
  }

  /** Reads every frame of a trace by walking its pages. */
  async readTrace(
    runId: string,
    limit = 200,
    client: HttpClient = this.http,
  ): Promise<{ frames: Json[]; pages: number }> {
    const frames: Json[] = []
    let cursor: string | null | undefined
    let pages = 0
    for (let i = 0; i < 100; i++) {
      const q = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
      const res = await getTrace(client, `/v1/runs/${runId}/trace${q}`)
      expectStatus(res, 200, `GET /v1/runs/${runId}/trace`)
      // §4: "The trace, either as a stream of frames or as pages of frames": a stream answer is read whole.
      const streamed = streamedFrames(res)
      if (streamed) return { frames: streamed, pages: 1 }
      const { items } = listPage(this.ctx(), res)
      if (!items) fail(`the trace answer has no array of frames: ${short(res.body)}`)
      const next = nextPageCursor(this.ctx(), res, limit, `GET /v1/runs/${runId}/trace`)
      pages++
      frames.push(...(items as Json[]))
      if (!next || items.length === 0) break
      cursor = next
    }
    return { frames, pages }
  }
}

/**
 * A resource's own id in an answer: `<kind>_id` or `id`. Spec §2: "Agent response fields: not shown" (and the same
 * for tasks, tools and subscriptions), so the field's name is the deployment's choice.
 */
export function ownId(
  body: unknown,
  kind: 'agent' | 'task' | 'tool' | 'webhook' | 'destination',
): string | undefined {
  const o = obj(body)
  const id = o[`${kind}_id`] ?? o.id
  return typeof id === 'string' ? id : undefined
}

/**
 * Reads a trace URL. §4: "The trace, either as a stream of frames or as pages of frames", and "The way a client
 * chooses between streaming and paging for the trace: not shown": pages are asked for first (JSON); a deployment
 * that serves the trace as a stream only and refuses JSON (406 Not Acceptable) is asked again for the stream.
 */
export async function getTrace(client: HttpClient, url: string): Promise<HttpResponse> {
  const res = await client.get(url)
  if (res.status !== 406) return res
  return client.get(url, { headers: { accept: 'text/event-stream, application/x-ndjson' } })
}

/** The frames of a trace answer, streamed or paged (one page); undefined when it carries no array of frames. */
export function traceFrames(ctx: CheckContext, res: HttpResponse): Json[] | undefined {
  return streamedFrames(res) ?? (listPage(ctx, res).items as Json[] | undefined)
}

/**
 * The frames of a trace answered as a stream (`text/event-stream` data lines or `application/x-ndjson` lines),
 * or undefined for any other answer. Lines that are not JSON objects (an `end` event, a heartbeat) are left out.
 */
export function streamedFrames(res: HttpResponse): Json[] | undefined {
  const type = res.headers['content-type'] ?? ''
  const sse = /text\/event-stream/i.test(type)
  if (!sse && !/ndjson|jsonl|json-seq/i.test(type)) return undefined
  const lines = res.text.split(/\r?\n/)
  const payloads = sse
    ? lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim())
    : // JSON text sequences (RFC 7464) start each record with RS (0x1e).
      lines.map((l) => (l.startsWith(String.fromCharCode(0x1e)) ? l.slice(1) : l).trim())
  const frames: Json[] = []
  for (const p of payloads) {
    try {
      const v = JSON.parse(p) as unknown
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) frames.push(v as Json)
    } catch {
      // not a frame
    }
  }
  return frames
}

/** The body that registers a tool of the suite's provider hint for `kind` (profile.tools in --config). */
export function toolRegistration(
  ctx: CheckContext,
  kind: 'succeed' | 'fail' | 'slow',
  name: string,
  options: { idempotent?: boolean; requiredScopes?: string[]; envelope?: string } = {},
): Json {
  const hint: ToolHint = ctx.config.profile.tools[kind]
  return {
    name,
    provider: hint.provider,
    input_schema: { type: 'object' },
    output_schema: {},
    policy_binding: {
      envelope: options.envelope ?? 'default',
      required_scopes: options.requiredScopes ?? [],
    },
    idempotent: options.idempotent ?? true,
    ...(hint.config ? { config: hint.config } : {}),
  }
}

export function toolId(body: unknown): string | undefined {
  const o = obj(body)
  const id = o.tool_id ?? o.id
  return typeof id === 'string' ? id : undefined
}

/** The run start body of spec §2, as the spec's own example shows it: for runs that need to call no tool. */
export function runBody(): Json {
  return specRunBody()
}

export function shortBody(res: HttpResponse): string {
  return short(res.body)
}

/**
 * Where a subscription the deployment should refuse for another reason (a bad body, a narrow token) points: the
 * suite's own receiver when one is declared, so a deployment that keeps it after all calls nothing but the suite;
 * otherwise a public name it is never meant to reach.
 */
export function unwantedHookUrl(ctx: CheckContext): string {
  const receiver = ctx.config.receiver.url
  return receiver ? `${receiver}/${ctx.name('unwanted')}` : 'https://example.com/hook'
}

/** An id of the same shape that names nothing. */
export function missingIdLike(id: string): string {
  const tail = id.slice(-6)
  const swapped = [...tail].map((ch) => (ch === '0' ? '1' : '0')).join('')
  return `${id.slice(0, -6)}${swapped}`
}
