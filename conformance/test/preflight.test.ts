/**
 * The preflight asks the deployment once per token (the expired and revoked ones aside), sending a request once more
 * when the deployment closed its connection before answering. Its budget follows the number of tokens: with every
 * token the suite knows, a deployment that drops every other connection still gets through the preflight instead of
 * an internal error ("request budget exhausted").
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listenOnTestPort } from '../../test/support/ports.js'
import { preflight } from '../src/cli.js'
import { resolveConfig, TOKENS, type TokenKey } from '../src/config.js'

let server: Server
let baseUrl: string
let requests = 0

beforeAll(async () => {
  server = createServer((req, res) => {
    requests += 1
    // Every other request: the connection closes before any answer.
    if (requests % 2 === 1) {
      req.socket.destroy()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[],"next_cursor":null}')
  })
  await listenOnTestPort(server)
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

describe('preflight', () => {
  it('asks with every token, each sent once more after a connection closed before its answer', async () => {
    const config = resolveConfig([]).config
    config.baseUrl = baseUrl
    const keys = Object.keys(TOKENS) as TokenKey[]
    config.tokens = { primary: 'tok-primary' }
    for (const key of keys) config.tokens[key] = `tok-${key}`
    requests = 0
    await expect(preflight(config)).resolves.toBeUndefined()
    // Two requests for each token it asks with: every token but the expired and revoked ones.
    expect(requests).toBe(2 * (keys.length - 2))
    expect(keys.length - 2).toBeGreaterThan(10)
  })
})
