/**
 * A reference server that has seen a little of everything a dashboard or an alert reads: a finished run, an error
 * answer, a stream subscription open while it is scraped. Series a server binds on first use (an error code, a
 * route, a topic kind) exist only after such traffic.
 */
import { expect } from 'vitest'
import { createAgent, registerTool, startRun, waitForRun } from '../runs/helpers.js'
import { openClient, type TestClient } from '../stream/client.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { type Series, scrape } from './helpers.js'

export interface ServerWithTraffic {
  t: TestServer
  text: string
  series: Series[]
  close(): Promise<void>
}

/** `databaseUrl`: the store (default: a fresh SQLite file). */
export async function serverWithTraffic(databaseUrl?: string): Promise<ServerWithTraffic> {
  const t = await startTestServer(databaseUrl ? { databaseUrl } : {})
  let stream: TestClient | undefined
  try {
    const { token } = await t.createKey()
    await registerTool(t, token, { name: 'search' })
    const agent = await createAgent(t, token, 'autonomous', ['search'])
    const run = await startRun(t, token, agent)
    await waitForRun(t, token, run.run_id, (r) => r.status === 'succeeded')
    expect((await t.request('GET', '/v1/runs/run_00000000000000000000000000', { token })).status).toBe(404)
    stream = await openClient(t.baseUrl, token)
    stream.send({ type: 'subscribe', topics: ['runs'] })
    await stream.waitFor((m) => m.type === 'subscribed')
    const { text, series } = await scrape(t.baseUrl)
    const open = stream
    return {
      t,
      text,
      series,
      async close() {
        await open.close()
        await t.close()
      },
    }
  } catch (err) {
    await stream?.close()
    await t.close()
    throw err
  }
}
