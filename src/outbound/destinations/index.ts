import type { DestinationTransports } from '../../domain/destinations/ports.js'
import type { OutboundHttp } from '../../domain/outbound.js'
import { cloudEventsTransport } from './cloudevents.js'
import { natsTransport } from './nats.js'
import { pagerDutyTransport } from './pagerduty.js'
import { slackTransport } from './slack.js'

export interface DestinationTransportOptions {
  /** The server's public URL (AGENTOPS_PUBLIC_URL): chat messages and incidents link to the run. */
  publicUrl?: string | undefined
}

/** One transport per destination type; every HTTP one goes through the guarded outbound port. NATS keeps connections. */
export function createDestinationTransports(
  outbound: OutboundHttp,
  options: DestinationTransportOptions = {},
): DestinationTransports {
  return {
    cloudevents: cloudEventsTransport(outbound),
    slack: slackTransport(outbound, { publicUrl: options.publicUrl }),
    pagerduty: pagerDutyTransport(outbound, { publicUrl: options.publicUrl }),
    nats: natsTransport(),
  }
}
