/** The suite's own webhook receiver: records every delivery and answers 200. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Delivery {
  receivedAt: number
  path: string
  headers: IncomingHttpHeaders
  raw: string
  body: Record<string, unknown> | undefined
}

export class WebhookReceiver {
  readonly deliveries: Delivery[] = []
  private server: Server | undefined
  private waiters: Array<() => void> = []
  port = 0

  async listen(host: string, port: number): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = []
      let size = 0
      req.on('data', (c: Buffer) => {
        size += c.length
        if (size <= 1024 * 1024) chunks.push(c)
      })
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        let body: Record<string, unknown> | undefined
        try {
          const parsed = JSON.parse(raw) as unknown
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
            body = parsed as Record<string, unknown>
        } catch {
          body = undefined
        }
        this.deliveries.push({
          receivedAt: Date.now(),
          path: req.url ?? '/',
          headers: req.headers,
          raw,
          body,
        })
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
        const waiters = this.waiters
        this.waiters = []
        for (const w of waiters) w()
      })
    })
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject)
      this.server!.listen(port, host, () => resolve())
    })
    this.port = (this.server.address() as AddressInfo).port
  }

  /** Waits (bounded) for the first delivery that matches. */
  async waitFor(match: (d: Delivery) => boolean, timeoutMs: number): Promise<Delivery | undefined> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.deliveries.find(match)
      if (found) return found
      const left = deadline - Date.now()
      if (left <= 0) return undefined
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 500))
        this.waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  async close(): Promise<void> {
    const server = this.server
    if (!server) return
    server.closeAllConnections?.()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
