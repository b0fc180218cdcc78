/**
 * A wake-up that never arrives (another replica's notification lost) only delays delivery: the stream's fallback
 * poll reads the durable log anyway. Records here are written by an ingestion service whose change feed nobody
 * hears, as a replica cut off from LISTEN would write them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalChangeFeed } from '../../src/domain/changes.js'
import { systemClock } from '../../src/domain/clock.js'
import { IngestionService } from '../../src/domain/ingestion/service.js'
import { createRepositories } from '../../src/store/repos/index.js'
import { NO_QUOTAS } from '../support/quotas.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { openClient } from './client.js'

describe('the stream fallback poll', () => {
  let t: TestServer

  beforeAll(async () => {
    t = await startTestServer({ config: { streamFallbackPollMs: 150 } })
  })
  afterAll(() => t.close())

  it('delivers records whose wake-up was lost, in order, once', async () => {
    const key = await t.createKey()
    // Its events reach the log, but neither its event notification nor its change feed is heard by anyone.
    const silentEvents = { append: t.services.events.append.bind(t.services.events), notify: () => {} }
    const records = createRepositories(t.services.db).records
    const deaf = new IngestionService(
      t.services.db,
      records,
      systemClock,
      silentEvents,
      NO_QUOTAS,
      new LocalChangeFeed(),
    )
    const client = await openClient(t.baseUrl, key.token)
    try {
      client.send({ type: 'subscribe', topics: ['connector:quiet'], since: { 'connector:quiet': 0 } })
      await client.waitFor((m) => m.type === 'subscribed')
      const workspace = { id: key.workspace_id, policyClasses: ['public'] }
      for (let i = 1; i <= 3; i++) {
        const result = await deaf.ingest(workspace, 'quiet', [
          { id: `q${i}`, ts: '2026-11-23T06:00:00Z', source: 's', policy_class: 'public', body: {} },
        ])
        expect(result.accepted).toBe(1)
      }
      const records = await client.collect((m) => m.type === 'record', 3, 5_000)
      expect(records.map((m) => m.seq)).toEqual([1, 2, 3])
      await new Promise((r) => setTimeout(r, 400))
      expect(client.messages.filter((m) => m.type === 'record')).toHaveLength(3)
    } finally {
      await client.close()
    }
  })
})
