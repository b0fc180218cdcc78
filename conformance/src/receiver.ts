/** The suite's own webhook receiver: records every delivery and answers 200 (or 500 when told to fail one). */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { givenBack, withheldMs } from './wait.js'

export interface Delivery {
  receivedAt: number
  /** The request's method (§4: a delivery is a POST to the subscriber's url). */
  method: string
  path: string
  headers: IncomingHttpHeaders
  raw: string
  body: Record<string, unknown> | undefined
  /** What the receiver answered. */
  status: number
}

/** How the receiver answers the requests an `answerWith` rule matches. */
export interface ReceiverAnswer {
  status: number
  body: string
  delayMs?: number
  headers?: Record<string, string>
  /** No answer at all: the connection is dropped once the request has arrived (recorded with `status`). */
  hangUp?: boolean
}

export class WebhookReceiver {
  readonly deliveries: Delivery[] = []
  private server: Server | undefined
  private waiters: Array<() => void> = []
  private failures: Array<{
    match: (body: Record<string, unknown> | undefined, path: string) => boolean
    left: number
  }> = []
  /** Attempts answered 500 so far, by the key a `failEach` rule gave them (an event at one subscription). */
  private failedByKey = new Map<string, number>()
  private eachRules: Array<{
    match: (body: Record<string, unknown> | undefined, path: string) => boolean
    key: (body: Record<string, unknown> | undefined, path: string) => string
    times: number
  }> = []
  /** Deliveries whose answer waits until `release` settles (see holdNext). */
  private holds: Array<{
    match: (body: Record<string, unknown> | undefined, path: string) => boolean
    release: Promise<void>
  }> = []
  /** Requests answered as a tool's endpoint would answer them (see answerWith). */
  private answers: Array<{
    match: (path: string) => boolean
    answer: ReceiverAnswer
  }> = []
  port = 0
  private closed = false

  /**
   * Answers every request whose path matches with `status`, `body` and `headers` (after `delayMs`) instead of 200:
   * the suite's stand-in for the endpoint of an `http` tool, or a service that refuses. The request is recorded like
   * any delivery.
   */
  answerWith(match: (path: string) => boolean, answer: ReceiverAnswer): void {
    this.answers.push({ match, answer })
  }

  /**
   * Keeps the answer to the next delivery that matches until `release` settles; the delivery is recorded when it
   * arrives. The deployment sees an attempt in progress for as long as the check needs one, and no longer.
   */
  holdNext(
    match: (body: Record<string, unknown> | undefined, path: string) => boolean,
    release: Promise<void>,
  ): void {
    this.holds.push({ match, release })
  }

  /**
   * Answers 500 to the first `times` attempts of every delivery that matches, counted per `key`, so that each
   * such delivery is retried on its own schedule.
   */
  failEach(
    match: (body: Record<string, unknown> | undefined, path: string) => boolean,
    key: (body: Record<string, unknown> | undefined, path: string) => string,
    times: number,
  ): void {
    this.eachRules.push({ match, key, times })
  }

  private failsEach(body: Record<string, unknown> | undefined, path: string): boolean {
    const rule = this.eachRules.find((r) => r.match(body, path))
    if (!rule) return false
    const key = rule.key(body, path)
    const n = this.failedByKey.get(key) ?? 0
    if (n >= rule.times) return false
    this.failedByKey.set(key, n + 1)
    return true
  }

  /** Answers 500 to the next `times` deliveries that match, to make the deployment retry. */
  failNext(match: (body: Record<string, unknown> | undefined, path: string) => boolean, times = 1): void {
    this.failures.push({ match, left: times })
  }

  /**
   * Forgets what earlier runs left: their deliveries, and the answers, failures and holds their checks set up. A
   * receiver that serves one run after another (a lane of the mutation run) then costs a run what its own deliveries
   * cost, where every wait and every look a check takes at `deliveries` scanned all the lane's deliveries so far, and
   * each delivery was matched against every rule of every run before. Only between runs: a run under way needs its
   * own. A late delivery for an earlier run is recorded and answered 200, as no rule of the run under way names it.
   */
  forgetEarlierRuns(): void {
    this.deliveries.length = 0
    this.failures = []
    this.failedByKey.clear()
    this.eachRules = []
    this.holds = []
    this.answers = []
  }

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
        const custom = this.answers.find((a) => a.match(req.url ?? '/'))?.answer
        const rule = custom
          ? undefined
          : this.failures.find((f) => f.left > 0 && f.match(body, req.url ?? '/'))
        if (rule) rule.left--
        const failed = !custom && (rule !== undefined || this.failsEach(body, req.url ?? '/'))
        const status = custom?.status ?? (failed ? 500 : 200)
        this.deliveries.push({
          receivedAt: Date.now(),
          method: req.method ?? '',
          path: req.url ?? '/',
          headers: req.headers,
          raw,
          body,
          status,
        })
        const answer = () =>
          custom?.hangUp
            ? req.socket.destroy()
            : res
                .writeHead(status, { 'content-type': 'application/json', ...custom?.headers })
                .end(custom?.body ?? (failed ? '{"ok":false}' : '{"ok":true}'))
        const hold = custom ? -1 : this.holds.findIndex((h) => h.match(body, req.url ?? '/'))
        if (custom?.delayMs) setTimeout(answer, custom.delayMs)
        else if (hold >= 0) {
          const [held] = this.holds.splice(hold, 1)
          void held!.release.finally(answer)
        } else answer()
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
    // Time a busy machine withheld from the deployment meanwhile is given back (wait.ts).
    const withheldAtStart = withheldMs()
    // Each wake-up looks at what came since the last look only: every delivery wakes every waiter, and a long run
    // (the mutation run's thousands of deliveries) would otherwise scan them all again each time, a cost that grows
    // with the square of the deliveries and can hold this process's loop past a request's timeout.
    let scanned = 0
    for (;;) {
      const arrived = this.deliveries
      for (; scanned < arrived.length; scanned++) {
        const d = arrived[scanned] as Delivery
        if (match(d)) return d
      }
      const left = deadline + givenBack(withheldAtStart, timeoutMs) - Date.now()
      // A closed receiver gets nothing more: waits still pending (a probe nobody judged) end at once.
      if (left <= 0 || this.closed) return undefined
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
    this.closed = true
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w()
    const server = this.server
    if (!server) return
    server.closeAllConnections?.()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** What to set when the deployment refuses the receiver URL or cannot reach it. */
export function receiverAdvice(url: string, what: string): string {
  return (
    `webhook receiver ${url}: ${what}. Give the deployment a URL it accepts and can reach: ` +
    `--receiver-url (AGENTOPS_CONFORMANCE_RECEIVER_URL), with --receiver-host 0.0.0.0 and --receiver-port N ` +
    `(AGENTOPS_CONFORMANCE_RECEIVER_HOST/_PORT) so the suite listens there. The reference server refuses ` +
    `loopback and private addresses unless their exact host:port is listed: ` +
    `AGENTOPS_WEBHOOK_PRIVATE_TARGETS=${hostAndPort(url)}.`
  )
}

/** The `host:port` a URL connects to (the scheme's default port filled in), as private-target lists name it. */
export function hostAndPort(url: string): string {
  try {
    const u = new URL(url)
    return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`
  } catch {
    return url
  }
}
