/** `npm run cluster`'s balancer follows each replica's /readyz: a replica that is not ready gets no requests. */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { startBalancer } from '../support/cluster.js'
import { listenOnTestPort } from '../support/ports.js'

const servers: Server[] = []
async function replica(name: string, isReady: () => boolean): Promise<string> {
  const server = createServer((req, res) => {
    if (req.url === '/readyz') res.writeHead(isReady() ? 200 : 503).end()
    else res.writeHead(200, { 'content-type': 'text/plain' }).end(name)
  })
  servers.push(server)
  await listenOnTestPort(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections()
    await new Promise<void>((r) => s.close(() => r()))
  }
})

describe('the cluster balancer', () => {
  it('sends nothing to a replica whose /readyz is not 200, and uses it again once it is', async () => {
    let aReady = false
    const balancer = await startBalancer(
      [await replica('a', () => aReady), await replica('b', () => true)],
      0,
      {
        readyzPollMs: 50,
      },
    )
    try {
      await balancer.polled
      const answers = async (n: number) => {
        const out: string[] = []
        for (let i = 0; i < n; i++) out.push(await (await fetch(balancer.url)).text())
        return out
      }
      expect(await answers(6)).toEqual(['b', 'b', 'b', 'b', 'b', 'b'])
      aReady = true
      for (let i = 0; i < 100 && !(await answers(2)).includes('a'); i++)
        await new Promise((r) => setTimeout(r, 20))
      expect(new Set(await answers(4))).toEqual(new Set(['a', 'b']))
    } finally {
      await balancer.close()
    }
  })
})
