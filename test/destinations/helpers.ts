import { ManualClock } from '../../src/domain/clock.js'
import type { DestinationTelemetry, DestinationTransports } from '../../src/domain/destinations/ports.js'
import { DestinationService, type DestinationSettings } from '../../src/domain/destinations/service.js'
import { EventLog } from '../../src/domain/events/log.js'
import { WebhookService } from '../../src/domain/webhooks/service.js'
import { createDestinationTransports } from '../../src/outbound/destinations/index.js'
import { createOutboundHttp } from '../../src/outbound/http.js'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { createDestinationRepositories } from '../../src/store/repos/destinations.js'
import { createRepositories, type Repositories } from '../../src/store/repos/index.js'
import { ANY_LOOPBACK_PORT } from '../support/private-targets.js'
import { TEST_WEBHOOK_SETTINGS } from '../webhooks/helpers.js'

export interface DestinationHarness {
  db: Db
  clock: ManualClock
  repos: Repositories
  destinations: DestinationService
  webhooks: WebhookService
  /** What the telemetry port heard, in order. */
  heard: string[]
  append(workspaceId: string, kind: string, data: Record<string, unknown>): Promise<void>
  close(): Promise<void>
}

/** Destinations and webhooks on one real store (their rows share the outbox table), transports to loopback. */
export async function destinationHarness(
  url: string,
  settings: Partial<DestinationSettings> & { transports?: DestinationTransports } = {},
  clock = new ManualClock(Date.now()),
): Promise<DestinationHarness> {
  const db = await openDb(url)
  await migrate(db)
  const repos = createRepositories(db)
  const events = new EventLog(repos.events, clock)
  const outbound = createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT })
  const heard: string[] = []
  const telemetry: DestinationTelemetry = {
    attempted: (type, outcome) => heard.push(`${type}:${outcome}`),
    gaveUp: (type) => heard.push(`${type ?? 'deleted'}:gave-up`),
  }
  const own = createDestinationRepositories(db)
  const destinations = new DestinationService(db, own.destinations, own.deliveries, clock, events, {
    outbound,
    transports: createDestinationTransports(outbound),
    telemetry,
    ...TEST_WEBHOOK_SETTINGS,
    ...settings,
  })
  const webhooks = new WebhookService(db, repos.webhooks, repos.deliveries, clock, events, {
    outbound,
    ...TEST_WEBHOOK_SETTINGS,
  })
  return {
    db,
    clock,
    repos,
    destinations,
    webhooks,
    heard,
    async append(workspaceId, kind, data) {
      await db.transaction((tx) => events.append(tx, { workspaceId, kind, subjectId: 'subj', data }))
      events.notify()
    },
    async close() {
      await destinations.stop()
      await webhooks.dispatcher.stop()
      await db.close()
    },
  }
}
