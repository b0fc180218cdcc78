import { createHash } from 'node:crypto'
import { type JetStreamClient, jetstream } from '@nats-io/jetstream'
import {
  connect,
  headers,
  type NatsConnection,
  NoRespondersError,
  TimeoutError,
} from '@nats-io/transport-node'
import type { DestinationTransport } from '../../domain/destinations/ports.js'
import type { DestinationRecord } from '../../domain/destinations/types.js'
import type { SendResult } from '../../domain/webhooks/sender.js'

/** The subject an event goes to: `<prefix>.<workspace id>.<kind>` (`agentops.ws_1.run.failed`). */
export function natsSubject(prefix: string, workspaceId: string, kind: string): string {
  return `${prefix}.${workspaceId}.${kind}`
}

interface Link {
  connection: Promise<NatsConnection>
  js?: JetStreamClient
}

/** Whether `err` or one of its causes passes `is` (the clients wrap their errors). */
function causedBy(err: unknown, is: (e: Error) => boolean): boolean {
  let e: unknown = err
  for (let depth = 0; depth < 5 && e instanceof Error; depth++) {
    if (is(e)) return true
    e = e.cause
  }
  return false
}

/** A failure's words without anything of the destination's credentials (the client's messages name none). */
function failure(err: unknown): SendResult {
  if (causedBy(err, (e) => e instanceof NoRespondersError))
    return {
      ok: false,
      statusCode: 503,
      error: 'no JetStream stream listens to the subject (503 no responders)',
    }
  if (causedBy(err, (e) => e instanceof TimeoutError))
    return { ok: false, statusCode: 408, error: 'JetStream did not acknowledge in time' }
  const message = err instanceof Error ? err.message : String(err)
  // Stryker disable next-line MethodExpression: equivalent: the client's messages are a line, far under 300 characters.
  return { ok: false, statusCode: null, error: `NATS: ${message}`.slice(0, 300) }
}

/**
 * NATS JetStream through the official client: each event published to `<prefix>.<workspace>.<kind>` with
 * `Nats-Msg-Id` set to the event id, so the stream's duplicate window drops a re-publish (a retry after a lost
 * acknowledgement, a redelivery, another replica after a crash). A delivery counts only once JetStream acknowledged
 * it (stored, or recognised as a duplicate). Connections are kept per server list and credentials, and closed on
 * stop.
 */
export function natsTransport(): DestinationTransport {
  const links = new Map<string, Link>()
  const keyOf = (d: DestinationRecord) => {
    const hash = createHash('sha256').update(JSON.stringify([d.config.servers, d.secrets]))
    // Stryker disable next-line StringLiteral: a speed path: a Buffer key is never found again, so each publish dials a connection of its own.
    return hash.digest('hex')
  }
  const linkFor = (d: DestinationRecord, timeoutMs: number): Link => {
    const key = keyOf(d)
    const known = links.get(key)
    // Stryker disable next-line ConditionalExpression: a speed path: without the kept connection each publish dials its own.
    if (known) return known
    // Stryker disable next-line ArrayDeclaration: unreachable: a stored nats destination's servers are 1-10 strings (settings.ts).
    const servers = Array.isArray(d.config.servers) ? d.config.servers.map(String) : []
    const link: Link = {
      connection: connect({
        servers,
        name: 'agentops',
        timeout: timeoutMs,
        // Keeps trying while up: an outbox attempt in between fails and is retried by the outbox.
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        // No stack captured for every request in case it fails: an error here is worded by failure() without one,
        // and capturing it was a tenth of the publish's CPU.
        // Stryker disable next-line BooleanLiteral: a speed path (the stack nobody reads).
        noAsyncTraces: true,
        ...(d.secrets.token ? { token: d.secrets.token } : {}),
        ...(d.secrets.user ? { user: d.secrets.user, pass: d.secrets.password ?? '' } : {}),
      }),
    }
    links.set(key, link)
    // A connection that could not be made is forgotten, so the next attempt dials again.
    link.connection.then(
      // Stryker disable next-line BlockStatement: a speed path (a JetStream client per publish); the closed connection it forgets is one the NATS server ended for good, which no suite run sees.
      (nc) => {
        link.js = jetstream(nc)
        void nc.closed().then(() => {
          if (links.get(key) === link) links.delete(key)
        })
      },
      () => {
        if (links.get(key) === link) links.delete(key)
      },
    )
    return link
  }
  return {
    async send(destination, event, context): Promise<SendResult> {
      // Every stored nats destination has a subject_prefix: settings.ts checks it and fills in its default.
      const prefix = String(destination.config.subject_prefix)
      const subject = natsSubject(prefix, destination.workspaceId, event.kind)
      try {
        const link = linkFor(destination, context.timeoutMs)
        const nc = await link.connection
        // Stryker disable next-line LogicalOperator: a speed path (a JetStream client per publish).
        const js = link.js ?? jetstream(nc)
        const h = headers()
        h.set('Content-Type', 'application/json')
        const stream = destination.config.stream
        await js.publish(subject, JSON.stringify(event.payload), {
          msgID: String(event.payload.id),
          timeout: context.timeoutMs,
          headers: h,
          // Stryker disable next-line ConditionalExpression: equivalent: the client sets Nats-Expected-Stream only for a stream name, and an absent one is undefined.
          ...(typeof stream === 'string' ? { expect: { streamName: stream } } : {}),
        })
        return { ok: true, statusCode: 200, error: null }
      } catch (err) {
        return failure(err)
      }
    },
    // Stryker disable all: the server's stop: it drains the kept connections; no answer of the API depends on it.
    async close() {
      const open = [...links.values()]
      links.clear()
      await Promise.allSettled(
        open.map(async (link) => {
          const nc = await link.connection
          await nc.drain()
        }),
      )
    },
    // Stryker restore all
  }
}
