/**
 * The Slack click signatures seen lately (SlackSignatureRepo): shared by every replica of one store, so a click
 * replayed to another replica than the one it reached first is a replay there too; forgotten after their window.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { SlackSignatureRepo } from '../../src/store/repos/slack-signatures.js'
import { backends } from '../support/backends.js'

const opened: Db[] = []
afterEach(async () => {
  for (const d of opened.splice(0)) await d.close()
})

const NOW = Date.UTC(2026, 0, 1)
const WINDOW = 600_000

describe.each(backends())('Slack signatures seen on $name', (backend) => {
  /** Two replicas: two connections to one database. */
  async function replicas(): Promise<[SlackSignatureRepo, SlackSignatureRepo]> {
    const url = await backend.freshUrl()
    const first = await openDb(url)
    opened.push(first)
    await migrate(first)
    const second = await openDb(url)
    opened.push(second)
    return [new SlackSignatureRepo(first), new SlackSignatureRepo(second)]
  }

  it('a signature is new once, to whichever replica sees it again', async () => {
    const [a, b] = await replicas()
    expect(await a.firstSeen('v0=one', NOW, WINDOW)).toBe(true)
    expect(await a.firstSeen('v0=one', NOW + 1, WINDOW)).toBe(false)
    expect(await b.firstSeen('v0=one', NOW + 2, WINDOW)).toBe(false)
    expect(await b.firstSeen('v0=two', NOW + 3, WINDOW)).toBe(true)
    expect(await a.firstSeen('v0=two', NOW + 4, WINDOW)).toBe(false)
  })

  it('forgets a signature once its window has passed, and keeps it until then', async () => {
    const [a, b] = await replicas()
    expect(await a.firstSeen('v0=old', NOW, WINDOW)).toBe(true)
    expect(await b.firstSeen('v0=old', NOW + WINDOW, WINDOW)).toBe(false)
    expect(await b.firstSeen('v0=old', NOW + WINDOW * 2 + 1, WINDOW)).toBe(true)
  })
})
