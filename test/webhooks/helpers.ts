import { createHmac } from 'node:crypto'
import { ManualClock } from '../../src/domain/clock.js'
import { EventLog } from '../../src/domain/events/log.js'
import { WebhookService, type WebhookSettings } from '../../src/domain/webhooks/service.js'
import { createOutboundHttp } from '../../src/outbound/http.js'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import type { Repositories } from '../../src/store/repos/index.js'
import { createRepositories } from '../../src/store/repos/index.js'
import { ANY_LOOPBACK_PORT } from '../support/private-targets.js'
import { NO_QUOTAS } from '../support/quotas.js'

/** Spec §6: the fields of a run.awaiting_approval delivery, plus the delivery's own `id`. */
export const AWAITING_APPROVAL_FIELDS = [
  'agent_id',
  'event',
  'id',
  'payload_preview',
  'queue',
  'reason',
  'run_id',
  'signature',
  'step_id',
  'ts',
]

/** A few lines of node:crypto that check spec §5's `signature` field without the server's helpers. */
export function independentlyVerified(rawBody: string, secret: string): boolean {
  const body = JSON.parse(rawBody) as Record<string, unknown>
  const signature = String(body.signature)
  delete body.signature
  const [tPart, ...entries] = signature.split(',')
  const t = (tPart ?? '').replace(/^t=/, '')
  const jcs = (v: unknown): string =>
    Array.isArray(v)
      ? `[${v.map(jcs).join(',')}]`
      : v !== null && typeof v === 'object'
        ? `{${Object.keys(v)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${jcs((v as Record<string, unknown>)[k])}`)
            .join(',')}}`
        : JSON.stringify(v)
  const hex = createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${t}.${jcs(body)}`)
    .digest('hex')
  return entries.includes(`v1=${hex}`)
}

/** The harness's dispatcher settings: the server's defaults (src/config.ts) with a short time-out and base. */
export const TEST_WEBHOOK_SETTINGS = {
  timeoutMs: 2_000,
  retry: { baseMs: 1_000, maxAttempts: 8 },
  concurrency: 16,
  pollMs: 1_000,
  quotas: NO_QUOTAS,
} as const

export interface Harness {
  db: Db
  clock: ManualClock
  events: EventLog
  repos: Repositories
  webhooks: WebhookService
  append(workspaceId: string, kind: string, data: Record<string, unknown>): Promise<void>
  close(): Promise<void>
}

/** A store-backed webhook service on a real Db; the clock starts at the wall clock so real verifiers agree. */
export async function harness(
  url: string,
  settings: Partial<WebhookSettings> = {},
  clock = new ManualClock(Date.now()),
): Promise<Harness> {
  const db = await openDb(url)
  await migrate(db)
  const repos = createRepositories(db)
  const events = new EventLog(repos.events, clock)
  const webhooks = new WebhookService(db, repos.webhooks, repos.deliveries, clock, events, {
    outbound: createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT }),
    ...TEST_WEBHOOK_SETTINGS,
    ...settings,
  })
  return {
    db,
    clock,
    events,
    repos,
    webhooks,
    async append(workspaceId, kind, data) {
      await db.transaction((tx) => events.append(tx, { workspaceId, kind, subjectId: 'subj', data }))
      events.notify()
    },
    async close() {
      await webhooks.dispatcher.stop()
      await db.close()
    },
  }
}
