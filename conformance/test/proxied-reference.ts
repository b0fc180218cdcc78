/**
 * The reference server behind a mutant proxy, with the suite's webhook receiver behind the same proxy (deliveries
 * go through the mutant's `delivery` on their way): what a test that runs a few checks through a rewriting proxy
 * needs, as a lane of the mutation run has it (without its nats-server).
 */
import { listenPort, testPort } from '../../test/support/ports.js'
import { HOOK_PREFIX, MutantProxy } from '../mutants/proxy.js'
import { resolveConfig, type SuiteConfig } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { WebhookReceiver } from '../src/receiver.js'
import { type ReferenceServer, startReference } from '../src/reference.js'

export interface ProxiedReference {
  reference: ReferenceServer
  receiver: WebhookReceiver
  proxy: MutantProxy
  contract: Contract
  /** A suite config for the proxy (`args` as the CLI takes them, a seed say), its tokens and the receiver. */
  config(args?: string[]): SuiteConfig
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
    async stop() {
      await proxy.close()
      await receiver.close()
      await reference.stop()
    },
  }
}
