/**
 * The reference server behind a mutant proxy, with the suite's webhook receiver behind the same proxy (deliveries
 * go through the mutant's `delivery` on their way): what a test that runs a few checks through a rewriting proxy
 * needs, as a lane of the mutation run has it (without its nats-server).
 */
import { listenPort, testPort } from '../../test/support/ports.js'
import { HOOK_PREFIX, MutantProxy } from '../mutants/proxy.js'
import { ALL_CHECKS } from '../src/checks/index.js'
import { resolveConfig, type SuiteConfig } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { WebhookReceiver } from '../src/receiver.js'
import { type ReferenceServer, startReference } from '../src/reference.js'
import { runChecks, selectChecks } from '../src/runner.js'
import type { RunSummary } from '../src/types.js'
import { verdictFor } from '../src/verdict.js'

export interface ProxiedReference {
  reference: ReferenceServer
  receiver: WebhookReceiver
  proxy: MutantProxy
  contract: Contract
  /** A suite config for the proxy (`args` as the CLI takes them, a seed say), its tokens and the receiver. */
  config(args?: string[]): SuiteConfig
  /**
   * The suite's checks of `ids` (in the suite's order) run through the proxy with `config`, the summary carrying the
   * verdict the CLI's defaults give (no --strict-profile, no --allow-incomplete).
   */
  run(config: SuiteConfig, ids: string[]): Promise<RunSummary>
  stop(): Promise<void>
}

export async function startProxiedReference(): Promise<ProxiedReference> {
  const receiver = new WebhookReceiver()
  await receiver.listen('127.0.0.1', await listenPort())
  // The reference may call the proxy's address (its one private target): its port is chosen before it starts.
  const proxyPort = await testPort()
  let reference: ReferenceServer
  try {
    reference = await startReference(() => {}, undefined, {
      port: await testPort(),
      receiverTarget: `127.0.0.1:${proxyPort}`,
    })
  } catch (err) {
    await receiver.close()
    throw err
  }
  const proxy = new MutantProxy(
    reference.baseUrl,
    () => `http://127.0.0.1:${receiver.port}`,
    reference.tokens,
  )
  await proxy.listen(proxyPort)
  const contract = Contract.fromFile(resolveConfig([]).config.openapiPath)
  return {
    reference,
    receiver,
    proxy,
    contract,
    config(args = []) {
      const c = resolveConfig(args).config
      c.baseUrl = proxy.url
      c.streamUrl = proxy.url.replace(/^http/, 'ws')
      c.tokens = { ...reference.tokens }
      c.receiver = { host: '127.0.0.1', port: receiver.port, url: `${proxy.url}${HOOK_PREFIX}/hooks` }
      c.waitMs = 8000
      return c
    },
    async run(config, ids) {
      const summary = await runChecks({
        config,
        checks: selectChecks(ALL_CHECKS, ids),
        contract,
        receiver,
      })
      summary.verdict = verdictFor(summary, { strictProfile: false, allowIncomplete: false })
      return summary
    },
    async stop() {
      await proxy.close()
      await receiver.close()
      await reference.stop()
    },
  }
}
