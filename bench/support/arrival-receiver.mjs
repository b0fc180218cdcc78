// A loopback HTTP receiver in a process of its own (bench/destinations.ts forks it): it answers every request at
// once (202 for /pagerduty, 200 otherwise) and records when each arrived, on the wall clock in milliseconds
// (performance.timeOrigin + performance.now(), comparable across processes). Over IPC: it sends { port } once
// listening; { take: true } answers { arrivals } with what arrived since the last take; { stop: true } ends it.
import { createServer } from 'node:http'
import { performance } from 'node:perf_hooks'

let arrivals = []
const server = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    arrivals.push(performance.timeOrigin + performance.now())
    res.writeHead(req.url?.startsWith('/pagerduty') ? 202 : 200).end('ok')
  })
})
server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }))
process.on('message', (m) => {
  if (m?.take) {
    process.send?.({ arrivals })
    arrivals = []
  } else if (m?.stop) {
    server.closeAllConnections()
    server.close(() => process.exit(0))
  }
})
process.on('disconnect', () => process.exit(0))
