/**
 * `stream.silent-peer-dropped` against stand-in stream servers (no deployment): a server that pings at once and drops
 * a peer that does not answer passes, even when its first ping comes with the handshake's answer (the socket counts
 * pings from its handshake, not from when the check looks); one that never pings, and one that pings but never drops,
 * fail, each saying which.
 */
import { createServer } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { type WebSocket, WebSocketServer } from 'ws'
import { listenOnTestPort } from '../../test/support/ports.js'
import { silentPeerChecks } from '../src/checks/silent-peers.js'
import { resolveConfig } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { runChecks } from '../src/runner.js'

const contract = Contract.fromFile(resolveConfig([]).config.openapiPath)
const streamCheck = silentPeerChecks.filter((c) => c.id === 'stream.silent-peer-dropped')
const stops: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop()
})

/** A stand-in stream server: `onSocket` runs on each socket as the handshake completes. */
async function standIn(onSocket: (ws: WebSocket) => void): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(404).end())
  const wss = new WebSocketServer({ server })
  wss.on('connection', onSocket)
  const port = await listenOnTestPort(server)
  stops.push(async () => {
    for (const ws of wss.clients) ws.terminate()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return `127.0.0.1:${port}`
}

async function judge(hostPort: string) {
  const { config } = resolveConfig([
    '--base-url',
    `http://${hostPort}`,
    '--stream-url',
    `ws://${hostPort}`,
    '--token',
    'tok',
    '--wait-ms',
    '1500',
    '--seed',
    '1',
  ])
  const summary = await runChecks({ config, contract, cleanup: false, checks: streamCheck })
  return summary.results[0]
}

describe('stream.silent-peer-dropped', () => {
  it('passes a server that pings with its handshake answer and drops a peer that answers none', async () => {
    const at = await standIn((ws) => {
      // The first ping right behind the 101: it can reach the client in the same read as the answer.
      ws.ping()
      let answered = false
      ws.on('pong', () => {
        answered = true
      })
      setTimeout(() => {
        if (!answered) ws.terminate()
      }, 200)
    })
    const result = await judge(at)
    expect([result?.outcome, result?.message]).toEqual(['pass', undefined])
  })

  it('fails a server that never pings', async () => {
    const at = await standIn(() => undefined)
    const result = await judge(at)
    expect(result?.outcome).toBe('fail')
    expect(result?.message).toMatch(/no WebSocket ping reached a stream connection within 1500 ms/)
  })

  it('fails a server that pings but keeps a peer that never answers', async () => {
    const at = await standIn((ws) => {
      const timer = setInterval(() => ws.ping(), 100)
      ws.on('close', () => clearInterval(timer))
    })
    const result = await judge(at)
    expect(result?.outcome).toBe('fail')
    expect(result?.message).toMatch(
      /a stream connection that answered none of \d+ pings stayed open for 1500 ms/,
    )
  })
})
