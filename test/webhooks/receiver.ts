/** A real HTTP receiver on 127.0.0.1 whose answers a test scripts one request at a time. */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { listenPort } from '../support/ports.js'

export interface Received {
  headers: IncomingHttpHeaders
  body: string
  /** Wall-clock arrival (ms), for ordering only. */
  at: number
}

/** A status code to answer with, or `hang` to never answer (the sender must time out). */
export type Answer = number | 'hang'

export interface Receiver {
  url: string
  received: Received[]
  /** Answers for the next requests, in order; once used up, `fallback` answers. */
  script(...answers: Answer[]): void
  fallback: Answer
  /** Extra headers on every answer (a Retry-After with a 429). */
  answerHeaders: Record<string, string>
  /** Resolves when at least `n` requests arrived (bounded wait). */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>
  close(): Promise<void>
}

export async function startReceiver(fallback: Answer = 200): Promise<Receiver> {
  const received: Received[] = []
  const queue: Answer[] = []
  const hanging: ServerResponse[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() })
      const answer = queue.shift() ?? receiver.fallback
      if (answer === 'hang') {
        hanging.push(res)
        return
      }
      res.writeHead(answer, { 'content-type': 'text/plain', ...receiver.answerHeaders }).end('ok')
    })
  })
  const port = await listenPort()
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const { port: bound } = server.address() as AddressInfo
  const receiver: Receiver = {
    url: `http://127.0.0.1:${bound}/hook`,
    received,
    fallback,
    answerHeaders: {},
    script: (...answers) => queue.push(...answers),
    async waitFor(n, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs
      while (received.length < n) {
        if (Date.now() > deadline) throw new Error(`receiver got ${received.length} of ${n} requests`)
        await new Promise((r) => setTimeout(r, 10))
      }
      return received
    },
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  return receiver
}
