/**
 * A round-robin balancer in front of reference replicas, as an operator runs one: each HTTP request (proxied by
 * http-proxy-3) and each WebSocket connection (relayed as a byte stream) goes to the next live replica in turn.
 * Plain ESM, so the mutation run's runner (conformance/stryker/switch-runner.mjs, run by StrykerJS without a
 * TypeScript loader) puts its replicas behind the same balancer as the cluster tests and `npm run cluster`
 * (./cluster.ts). Types: ./balancer.d.mts.
 */
import { createServer } from 'node:http'
import { connect } from 'node:net'
import { createProxyServer } from 'http-proxy-3'

/** How long a /readyz poll may take before the balancer counts the replica as not ready. */
const READYZ_TIMEOUT_MS = 2_000

/** A replica that refused a connection is skipped for this long before it is tried again. */
const DOWN_FOR_MS = 2_000

/** Listens on 127.0.0.1:`port` (0: the kernel's choice) in front of `targets` (base URLs). */
export async function startBalancer(targets, port = 0, options = {}) {
  const proxy = createProxyServer({ xfwd: true })
  const downUntil = new Map()
  const notReady = new Set()
  const picks = []
  let next = 0
  const pick = () => {
    for (let tried = 0; tried < targets.length; tried++) {
      const i = next++ % targets.length
      if ((downUntil.get(i) ?? 0) <= Date.now() && !notReady.has(i)) return i
    }
    return next++ % targets.length
  }
  const pollMs = options.readyzPollMs ?? 0
  const askAll = () =>
    Promise.all(
      targets.map(async (target, i) => {
        // A replica that cannot answer /readyz in 2 s is drained; a shorter bound drained healthy replicas of a
        // busy machine (load 17 on 2 cores: a 500 ms bound marked every replica not ready at once).
        const ready = await fetch(`${target}/readyz`, {
          signal: AbortSignal.timeout(Math.max(READYZ_TIMEOUT_MS, pollMs)),
        }).then(
          (res) => res.status === 200,
          () => false,
        )
        if (ready) notReady.delete(i)
        else notReady.add(i)
      }),
    ).then(() => undefined)
  const polled = pollMs > 0 ? askAll() : Promise.resolve()
  let polling = polled
  const poller =
    pollMs > 0
      ? setInterval(() => {
          polling = polling.then(askAll)
        }, pollMs)
      : undefined
  poller?.unref()
  const markDown = (err, i) => {
    if (err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET') downUntil.set(i, Date.now() + DOWN_FOR_MS)
  }
  const server = createServer((req, res) => {
    const i = pick()
    picks.push({ kind: 'http', replica: i })
    proxy.web(req, res, { target: targets[i] }, (err) => {
      markDown(err, i)
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json', connection: 'close' })
        res.end(
          JSON.stringify({
            error: {
              code: 'unavailable',
              message: 'No replica answered',
              detail: {},
              request_id: 'balancer',
            },
          }),
        )
      } else res.destroy()
    })
  })
  // WebSocket upgrades are relayed byte for byte (request head, then both directions): whatever the replica
  // answers — 101 or a refusal — reaches the client untouched, and either side closing closes the other.
  server.on('upgrade', (req, socket, head) => {
    const i = pick()
    picks.push({ kind: 'ws', replica: i })
    const target = new URL(targets[i])
    const upstream = connect(Number(target.port), target.hostname)
    const drop = () => {
      socket.destroy()
      upstream.destroy()
    }
    socket.on('error', drop)
    socket.on('close', drop)
    upstream.on('close', drop)
    upstream.on('error', (err) => {
      markDown(err, i)
      drop()
    })
    upstream.on('connect', () => {
      const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`]
      for (let h = 0; h < req.rawHeaders.length; h += 2)
        lines.push(`${req.rawHeaders[h]}: ${req.rawHeaders[h + 1]}`)
      lines.push(`X-Forwarded-For: ${req.socket.remoteAddress ?? ''}`)
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`)
      if (head.length > 0) upstream.write(head)
      socket.pipe(upstream).pipe(socket)
    })
  })
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    picks,
    polled,
    async close() {
      if (poller) clearInterval(poller)
      await polling
      server.closeAllConnections()
      await new Promise((resolve) => server.close(() => resolve()))
      proxy.close()
    },
  }
}
