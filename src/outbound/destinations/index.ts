import type { DestinationTransport, DestinationTransports } from '../../domain/destinations/ports.js'
import type { OutboundHttp } from '../../domain/outbound.js'
import { pagerDutyTransport } from './pagerduty.js'

export interface DestinationTransportOptions {
  /** The server's public URL (AGENTOPS_PUBLIC_URL): chat messages and incidents link to the run. */
  publicUrl?: string | undefined
}

/**
 * One transport per destination type; every HTTP one goes through the guarded outbound port. NATS keeps connections.
 * The transports built on a client library (the CloudEvents SDK, Slack's, NATS's) load it with their module on their
 * first send: a server none of whose destinations is of that type never loads it (a faster start).
 */
export function createDestinationTransports(
  outbound: OutboundHttp,
  options: DestinationTransportOptions = {},
): DestinationTransports {
  return {
    cloudevents: onFirstSend(async () => (await import('./cloudevents.js')).cloudEventsTransport(outbound)),
    slack: onFirstSend(async () =>
      (await import('./slack.js')).slackTransport(outbound, { publicUrl: options.publicUrl }),
    ),
    pagerduty: pagerDutyTransport(outbound, { publicUrl: options.publicUrl }),
    nats: onFirstSend(async () => (await import('./nats.js')).natsTransport()),
  }
}

/** A transport made by `load` when it first sends; closing one that never sent has nothing to close. */
export function onFirstSend(load: () => Promise<DestinationTransport>): DestinationTransport {
  let made: Promise<DestinationTransport> | undefined
  return {
    async send(destination, event, context) {
      made ??= load()
      return (await made).send(destination, event, context)
    },
    async close() {
      await (await made)?.close?.()
    },
  }
}
