import type { DestinationTransports } from '../../domain/destinations/ports.js'
import type { OutboundHttp } from '../../domain/outbound.js'
import { cloudEventsTransport } from './cloudevents.js'

/** One transport per destination type; every HTTP one goes through the guarded outbound port. */
export function createDestinationTransports(outbound: OutboundHttp): DestinationTransports {
  return {
    cloudevents: cloudEventsTransport(outbound),
  }
}
