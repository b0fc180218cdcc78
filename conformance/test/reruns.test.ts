/**
 * Checks that hold when the deployment has seen the suite before, and when an event arrives more than once. A team
 * runs the suite again and again against one long-lived deployment, and a webhook may be delivered twice under one
 * event (at least once: the answer to the first was lost); neither makes a correct deployment fail.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HOOK_PREFIX, type Mutant } from '../mutants/proxy.js'
import { ONE_CHARACTER_KEYS } from '../src/checks/idempotency.js'
import type { CheckResult } from '../src/types.js'
import { type ProxiedReference, startProxiedReference } from './proxied-reference.js'

let t: ProxiedReference

beforeAll(async () => {
  t = await startProxiedReference()
}, 60_000)

afterAll(() => t?.stop())

async function run(id: string, mutant?: Mutant): Promise<CheckResult> {
  t.proxy.mutant = mutant
  try {
    const { results } = await t.run(t.config(), [id])
    const result = results.find((r) => r.id === id)
    if (!result) throw new Error(`${id} did not run`)
    return result
  } finally {
    t.proxy.mutant = undefined
  }
}

describe('a deployment that has seen the suite before', () => {
  it('still takes a one-character Idempotency-Key once every one the check draws from was used', async () => {
    // Earlier runs (or anyone) used each one-character key for a request of their own.
    for (const key of ONE_CHARACTER_KEYS) {
      const res = await fetch(`${t.reference.baseUrl}/v1/agents`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${t.reference.tokens.primary}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify({ name: `earlier-${randomBytes(4).toString('hex')}`, behavior: 'autonomous' }),
      })
      expect([200, 201]).toContain(res.status)
    }
    const result = await run('idempotency.key-form')
    expect(result.outcome, result.message).toBe('pass')
  }, 60_000)
})

describe('an event delivered twice', () => {
  it('counts as one ingest.batch_accepted event', async () => {
    // Each batch event reaches the receiver twice under its one id, as a retry after a lost answer does.
    const twice: Mutant = {
      id: 'batch-events-delivered-twice',
      description: 'every ingest.batch_accepted delivery arrives twice',
      targets: [],
      async delivery(req) {
        if (!req.body.includes('"ingest.batch_accepted"')) return req
        const { host: _h, connection: _c, 'content-length': _l, ...headers } = req.headers
        await fetch(`http://127.0.0.1:${t.receiver.port}${req.path.slice(HOOK_PREFIX.length)}`, {
          method: 'POST',
          headers,
          body: req.body,
        })
        return req
      },
    }
    const result = await run('ingest.batch-event', twice)
    expect(result.outcome, result.message).toBe('pass')
  }, 60_000)

  it('leaves the backoff probe unjudged when deliveries carry no webhook-id to match the log with', async () => {
    const anonymous: Mutant = {
      id: 'no-webhook-id',
      description: 'deliveries carry no webhook-id header',
      targets: [],
      delivery(req) {
        const { 'webhook-id': _id, ...headers } = req.headers
        return { ...req, headers }
      },
    }
    const result = await run('webhooks.retry-gaps-grow', anonymous)
    expect(result.outcome, result.message).toBe('skip')
    expect(result.message).toMatch(/no webhook-id header/)
  }, 60_000)
})
