import type { ManualClock } from '../../src/domain/clock.js'
import type { DestinationTelemetry, DestinationTransports } from '../../src/domain/destinations/ports.js'
import { DestinationService, type DestinationSettings } from '../../src/domain/destinations/service.js'
import { createDestinationTransports } from '../../src/outbound/destinations/index.js'
import { createOutboundHttp } from '../../src/outbound/http.js'
import { createDestinationRepositories } from '../../src/store/repos/destinations.js'
import { ANY_LOOPBACK_PORT } from '../support/private-targets.js'
import { type Harness, harness, TEST_WEBHOOK_SETTINGS } from '../webhooks/helpers.js'

export interface DestinationHarness extends Harness {
  destinations: DestinationService
  /** What the telemetry port heard, in order. */
  heard: string[]
}

/**
 * Destinations beside the webhook harness on one real store (their rows share the outbox table and the event log),
 * transports to loopback.
 */
export async function destinationHarness(
  url: string,
  settings: Partial<DestinationSettings> & { transports?: DestinationTransports } = {},
  clock?: ManualClock,
): Promise<DestinationHarness> {
  const base = await harness(url, {}, clock)
  const outbound = createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT })
  const heard: string[] = []
  const telemetry: DestinationTelemetry = {
    attempted: (type, outcome) => heard.push(`${type}:${outcome}`),
    gaveUp: (type) => heard.push(`${type ?? 'deleted'}:gave-up`),
  }
  const own = createDestinationRepositories(base.db)
  const destinations = new DestinationService(
    base.db,
    own.destinations,
    own.deliveries,
    base.clock,
    base.events,
    {
      outbound,
      transports: createDestinationTransports(outbound),
      telemetry,
      ...TEST_WEBHOOK_SETTINGS,
      ...settings,
    },
  )
  return {
    ...base,
    destinations,
    heard,
    async close() {
      await destinations.stop()
      await base.close()
    },
  }
}
