/**
 * A free port for a server another process is about to start (the reference, Prism, NATS): one the kernel never
 * hands out by itself. A port taken with listen(0) and closed again is free only until the kernel gives it away: to
 * another process's listen(0), or as the local port of an outgoing connection, and a busy machine does that within
 * the second or two a child process takes to bind it. The child then fails to bind while whatever took the port
 * answers in its place. Ports below the kernel's ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range) are
 * never handed out that way, so the port is taken at random from below it, checked free first.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/** The lowest port chosen: above the well-known and most registered services' ports. */
const LOWEST = 10_000
/** Fewer than this many ports below the ephemeral range, and the kernel's choice is taken instead. */
const FEWEST = 1_000

/** The first port of the kernel's ephemeral range (Linux's default 32768 where it cannot be read). */
export function ephemeralStart(
  read: () => string = () => readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'),
): number {
  try {
    const first = Number(read().trim().split(/\s+/)[0])
    return Number.isInteger(first) && first > 0 ? first : 32_768
  } catch {
    return 32_768
  }
}

/** Whether the host's port can be bound now (and is let go again at once). */
export function canListen(port: number, host: string): Promise<boolean> {
  const probe = createServer()
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false))
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)))
  })
}

/** The kernel's choice of a free port (listen(0)), let go at once. */
export function kernelPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, host, () => {
      const address = s.address()
      const port = typeof address === 'object' && address ? address.port : 0
      s.close(() => resolve(port))
    })
  })
}

/** Ports this process has handed out already: never twice, even after their server closed. */
const handed = new Set<number>()

/**
 * A free port for a child process to bind: at random below the kernel's ephemeral range, never one this process
 * handed out before; the kernel's choice when that range is too small or no port of it is free after many tries.
 */
export async function freePort(host = '127.0.0.1', random: () => number = Math.random): Promise<number> {
  const top = ephemeralStart() - 1
  if (top - LOWEST + 1 >= FEWEST) {
    for (let tries = 0; tries < 200; tries++) {
      const port = LOWEST + Math.floor(random() * (top - LOWEST + 1))
      if (handed.has(port)) continue
      if (await canListen(port, host)) {
        handed.add(port)
        return port
      }
    }
  }
  return kernelPort(host)
}
