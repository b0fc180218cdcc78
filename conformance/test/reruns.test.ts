/**
 * Checks that hold when the deployment has seen the suite before, and when an event arrives more than once. A team
 * runs the suite again and again against one long-lived deployment, and a webhook may be delivered twice under one
 * event (at least once: the answer to the first was lost); neither makes a correct deployment fail.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listenPort, testPort } from '../../test/support/ports.js'
import { HOOK_PREFIX, type Mutant, MutantProxy } from '../mutants/proxy.js'
import { ALL_CHECKS } from '../src/checks/index.js'
import { resolveConfig, type SuiteConfig } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { WebhookReceiver } from '../src/receiver.js'
import { type ReferenceServer, startReference } from '../src/reference.js'
import { runChecks, selectChecks } from '../src/runner.js'
import type { CheckResult } from '../src/types.js'

let reference: ReferenceServer
let receiver: WebhookReceiver
let proxy: MutantProxy
let contract: Contract

beforeAll(async () => {
  receiver = new WebhookReceiver()
  await receiver.listen('127.0.0.1', await listenPort())
  const proxyPort = await testPort()
  reference = await startReference(() => {}, undefined, {
    port: await testPort(),
    receiverTarget: `127.0.0.1:${proxyPort}`,
  })
  proxy = new MutantProxy(reference.baseUrl, () => `http://127.0.0.1:${receiver.port}`, reference.tokens)
  await proxy.listen(proxyPort)
  contract = Contract.fromFile(resolveConfig([]).config.openapiPath)
}, 60_000)

afterAll(async () => {
  await proxy?.close()
  await receiver?.close()
  await reference?.stop()
})

function config(): SuiteConfig {
  const c = resolveConfig([]).config
  c.baseUrl = proxy.url
  c.streamUrl = proxy.url.replace(/^http/, 'ws')
  c.tokens = { ...reference.tokens }
  c.receiver = { host: '127.0.0.1', port: receiver.port, url: `${proxy.url}${HOOK_PREFIX}/hooks` }
  c.waitMs = 8000
  return c
}

async function run(id: string, mutant?: Mutant): Promise<CheckResult> {
  proxy.mutant = mutant
  try {
    const { results } = await runChecks({
      config: config(),
      checks: selectChecks(ALL_CHECKS, [id]),
      contract,
      receiver,
    })
    const result = results.find((r) => r.id === id)
    if (!result) throw new Error(`${id} did not run`)
    return result
  } finally {
    proxy.mutant = undefined
  }
}

const ALPHANUMERIC = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'

describe('a deployment that has seen the suite before', () => {
  it('still takes a one-character Idempotency-Key once every one the check draws from was used', async () => {
    // Earlier runs (or anyone) used each one-character key for a request of their own.
    for (const key of ALPHANUMERIC) {
      const res = await fetch(`${reference.baseUrl}/v1/agents`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${reference.tokens.primary}`,
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
        await fetch(`http://127.0.0.1:${receiver.port}${req.path.slice(HOOK_PREFIX.length)}`, {
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
