/**
 * The outbox's batched read of its targets (getMany on webhook subscriptions and destinations), on both stores:
 * each id counts only in the workspace it was asked for, and deleted targets are left out, as `get` does; and the
 * fan-out's look for any target, made after every commit that appends events, rides the pipeline on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type Db, timesStatements } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { createDestinationRepositories, DestinationRepo } from '../../src/store/repos/destinations.js'
import { createRepositories } from '../../src/store/repos/index.js'
import { WebhookRepo } from '../../src/store/repos/webhooks.js'
import { backends } from '../support/backends.js'

const opened: Db[] = []
afterEach(async () => {
  for (const d of opened.splice(0)) await d.close()
})

const NOW = Date.UTC(2026, 0, 1)

describe.each(backends())('outbox targets on $name', (backend) => {
  async function setUp() {
    const db = await openDb(await backend.freshUrl())
    opened.push(db)
    await migrate(db)
    return db
  }

  it('webhooks: reads the asked subscriptions in their own workspaces, never a deleted one', async () => {
    const repo = new WebhookRepo(await setUp())
    const hook = (id: string, workspaceId: string) =>
      repo.insert({
        id,
        workspaceId,
        url: `https://example.test/${id}`,
        events: ['agent.created'],
        secrets: [{ secret: 'whsec_x', expiresAt: null }],
        status: 'active',
        afterEventSeq: 0,
        createdAt: NOW,
      })
    await hook('whk_a', 'ws_a')
    await hook('whk_b', 'ws_a')
    await hook('whk_c', 'ws_b')
    await hook('whk_gone', 'ws_a')
    await repo.markDeleted('whk_gone', NOW)
    expect(await repo.getMany([])).toEqual(new Map())
    const found = await repo.getMany([
      { workspaceId: 'ws_a', id: 'whk_a' },
      { workspaceId: 'ws_a', id: 'whk_b' },
      { workspaceId: 'ws_a', id: 'whk_c' }, // another workspace's
      { workspaceId: 'ws_a', id: 'whk_gone' },
      { workspaceId: 'ws_a', id: 'whk_none' },
    ])
    expect([...found.keys()].sort()).toEqual(['whk_a', 'whk_b'])
    expect(found.get('whk_a')).toEqual(await repo.get('ws_a', 'whk_a'))
  })

  it('destinations: reads the asked destinations in their own workspaces, never a deleted one', async () => {
    const repo = new DestinationRepo(await setUp())
    const destination = (id: string, workspaceId: string) =>
      repo.insert({
        id,
        workspaceId,
        type: 'cloudevents',
        name: id,
        events: ['run.failed'],
        agentIds: null,
        config: { url: `https://example.test/${id}` },
        secrets: { authorization: 'Bearer x' },
        status: 'active',
        afterEventSeq: 0,
        createdAt: NOW,
        updatedAt: NOW,
      })
    await destination('dst_a', 'ws_a')
    await destination('dst_b', 'ws_b')
    await destination('dst_gone', 'ws_b')
    await repo.markDeleted('dst_gone', NOW)
    const found = await repo.getMany([
      { workspaceId: 'ws_a', id: 'dst_a' },
      { workspaceId: 'ws_a', id: 'dst_b' }, // another workspace's
      { workspaceId: 'ws_b', id: 'dst_gone' },
    ])
    expect([...found.keys()]).toEqual(['dst_a'])
    expect(found.get('dst_a')).toEqual(await repo.get('ws_a', 'dst_a'))
    const other = await repo.getMany([{ workspaceId: 'ws_b', id: 'dst_b' }])
    expect(other.get('dst_b')?.workspaceId).toBe('ws_b')
  })
})

describe.each(backends().filter((b) => b.name === 'postgres'))('the fan-out’s look on $name', (backend) => {
  it('goes through the pipeline for webhooks and destinations alike, not a connection of the pool', async () => {
    const db = await openDb(await backend.freshUrl())
    opened.push(db)
    await migrate(db)
    if (!timesStatements(db)) throw new Error('PostgreSQL times its statements')
    const paths: string[] = []
    db.timeStatements((path) => paths.push(path))
    const { webhooks } = createRepositories(db)
    const { destinations } = createDestinationRepositories(db)
    expect([await webhooks.minAfterSeq(), await destinations.minAfterSeq()]).toEqual([null, null])
    expect(paths).toEqual(['pipeline', 'pipeline'])
  })
})
