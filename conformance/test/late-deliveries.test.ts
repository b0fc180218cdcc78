/**
 * Webhooks delivered a few seconds late are legal (spec §6 states no delivery latency): through a deployment that
 * holds every delivery for LATE_DELIVERY_MS, the core checks that judge deliveries wait for them within --wait-ms
 * and pass; none skips (INCOMPLETE) or fails for the lateness.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lateDialect } from '../mutants/dialects/late.js'
import { HOOK_PREFIX, MutantProxy } from '../mutants/proxy.js'
import { ALL_CHECKS } from '../src/checks/index.js'
import { resolveConfig } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { WebhookReceiver } from '../src/receiver.js'
import { freePort, type ReferenceServer, startReference } from '../src/reference.js'
import { runChecks, selectChecks } from '../src/runner.js'

/**
 * The suite's shared subscription (webhooks.subscribe) first, then the run checks, whose events queue up on it (the
 * reference delivers to one subscription one attempt at a time, each held here), then the core check that judges
 * two workspaces' deliveries at once: it must not wait behind that queue.
 */
const CHECKS = ['webhooks.subscribe', 'runs.', 'tenancy.webhooks-never-cross-workspaces']

let reference: ReferenceServer
let receiver: WebhookReceiver
let proxy: MutantProxy

beforeAll(async () => {
  receiver = new WebhookReceiver()
  await receiver.listen('127.0.0.1', 0)
  // Deliveries pass the proxy (its hook prefix): its address is the reference's one private target.
  const proxyPort = await freePort()
  reference = await startReference(() => {}, undefined, { receiverTarget: `127.0.0.1:${proxyPort}` })
  proxy = new MutantProxy(reference.baseUrl, () => `http://127.0.0.1:${receiver.port}`, reference.tokens)
  await proxy.listen(proxyPort)
  proxy.mutant = lateDialect()
}, 60_000)

afterAll(async () => {
  await proxy?.close()
  await receiver?.close()
  await reference?.stop()
})

describe('webhooks delivered a few seconds late', () => {
  it('the core checks that judge deliveries wait for them within --wait-ms and pass', async () => {
    const c = resolveConfig(['--seed', '7']).config
    c.baseUrl = proxy.url
    c.streamUrl = proxy.url.replace(/^http/, 'ws')
    c.tokens = { ...reference.tokens }
    c.receiver = { host: '127.0.0.1', port: receiver.port, url: `${proxy.url}${HOOK_PREFIX}/hooks` }
    // The suite's default --wait-ms: a few seconds late is well within it.
    c.waitMs = 15_000
    const summary = await runChecks({
      config: c,
      checks: selectChecks(ALL_CHECKS, CHECKS),
      contract: Contract.fromFile(c.openapiPath),
      receiver,
    })
    const core = summary.results.filter((r) => r.level === 'core')
    expect(core.map((r) => r.id)).toContain('tenancy.webhooks-never-cross-workspaces')
    for (const r of core) expect(r.outcome, `${r.id}: ${r.message}`).toBe('pass')
  }, 180_000)
})
