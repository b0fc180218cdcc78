/**
 * Subscriptions are the /v1/stream topics over graphql-ws: the same topic scopes and the same TopicSource
 * ("read after the last seq sent"), woken by the same hooks as the stream hub, so replay, the replay/live seam and
 * any cross-replica wake-up behave exactly as on /v1/stream.
 */

import { assertScope } from '../api/scopes.js'
import { connectorSource, MAX_REPLAY, runsSource, type TopicSource } from '../api/topic-sources.js'
import { parseTopic } from '../api/topics.js'
import { ApiError } from '../domain/errors.js'
import type { GraphqlContext } from './context.js'

const READ_PAGE = 200
type Message = Record<string, unknown>

function sinceArg(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new ApiError('invalid_request', 'since must be a non-negative integer seq', {
      issues: [{ location: 'args', path: 'since', message: 'must be a non-negative integer' }],
      fields: ['since'],
    })
  }
  return value
}

export function runEvents(_p: unknown, args: Record<string, unknown>, ctx: GraphqlContext) {
  const topic = parseTopic('runs')
  if (!topic) throw new Error('the runs topic is always known')
  assertScope(ctx.auth, topic.scope)
  const since = sinceArg(args.since)
  const source = runsSource(ctx.services.events, ctx.auth.workspaceId)
  return new TopicFollower('runs', source, since, (wake) => ctx.services.events.subscribe(wake))
}

export function connectorRecords(_p: unknown, args: Record<string, unknown>, ctx: GraphqlContext) {
  const name = `connector:${String(args.connector_id)}`
  const topic = parseTopic(name)
  if (topic?.kind !== 'connector') {
    throw new ApiError('invalid_request', 'connector_id is not a valid connector id', {
      issues: [{ location: 'args', path: 'connector_id', message: 'must match ^[A-Za-z0-9_.:-]{1,128}$' }],
      fields: ['connector_id'],
    })
  }
  assertScope(ctx.auth, topic.scope)
  const since = sinceArg(args.since)
  const workspaceId = ctx.auth.workspaceId
  const source = connectorSource(ctx.services.ingestion, workspaceId, topic.connectorId, name)
  return new TopicFollower(name, source, since, (wake) =>
    ctx.services.ingestion.onBatch((ws, connectorId) => {
      if (ws === workspaceId && connectorId === topic.connectorId) wake()
    }),
  )
}

/**
 * An async iterator over one topic: a `gap` first when `since` is too far back, then every message after the last
 * seq delivered, waiting for a wake-up when caught up. `return()` (the client completed) ends a pending wait at once.
 */
export class TopicFollower implements AsyncIterableIterator<Message> {
  private after = 0
  private started = false
  private done = false
  private dirty = false
  private waiting: (() => void) | undefined
  private readonly queue: Message[] = []
  private readonly unsubscribe: () => void

  constructor(
    private readonly topic: string,
    private readonly source: TopicSource,
    private readonly since: number | undefined,
    listen: (wake: () => void) => () => void,
    private readonly maxReplay = MAX_REPLAY,
  ) {
    // Listen before the first read, so a change that lands in between is not missed.
    this.unsubscribe = listen(() => {
      this.dirty = true
      this.waiting?.()
    })
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Message> {
    return this
  }

  async next(): Promise<IteratorResult<Message>> {
    try {
      while (!this.done) {
        const queued = this.queue.shift()
        if (queued) return { value: queued, done: false }
        if (!this.started) await this.start()
        else if (!(await this.fill())) await this.waitForWake()
      }
    } catch (err) {
      await this.return()
      throw err
    }
    return { value: undefined, done: true }
  }

  async return(): Promise<IteratorResult<Message>> {
    if (!this.done) {
      this.done = true
      this.unsubscribe()
      this.waiting?.()
    }
    return { value: undefined, done: true }
  }

  private async start(): Promise<void> {
    this.started = true
    if (this.since === undefined) {
      this.after = await this.source.head()
      return
    }
    const resume = await this.source.resume(this.since, this.maxReplay)
    this.after = resume.after
    if (resume.gap) this.queue.push({ type: 'gap', topic: this.topic, ...resume.gap })
  }

  /** Reads what follows the last seq delivered; false when nothing new is there. */
  private async fill(): Promise<boolean> {
    this.dirty = false
    const { items, scannedTo } = await this.source.read(this.after, READ_PAGE)
    for (const item of items) {
      this.queue.push(item.message)
      this.after = item.seq
    }
    const advanced = scannedTo > this.after
    this.after = Math.max(this.after, scannedTo)
    return items.length > 0 || advanced
  }

  private async waitForWake(): Promise<void> {
    if (this.dirty || this.done) return
    await new Promise<void>((resolve) => {
      this.waiting = resolve
    })
    this.waiting = undefined
  }
}
