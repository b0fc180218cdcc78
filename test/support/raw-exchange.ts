/**
 * A raw HTTP/1.1 exchange with a test server, for requests no HTTP client sends as written (broken request lines,
 * upgrades, framings): the parts are written in turn, 30 ms apart, and everything the server answered before it
 * closed the connection comes back as latin1 text.
 */
import { connect } from 'node:net'

export function rawExchange(baseUrl: string, ...parts: (string | Buffer)[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(baseUrl).port), '127.0.0.1')
    let text = ''
    socket.on('data', (d) => {
      text += d.toString('latin1')
    })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
    const next = (i: number) => {
      const part = parts[i]
      if (part === undefined) return
      socket.write(typeof part === 'string' ? Buffer.from(part, 'latin1') : part)
      setTimeout(() => next(i + 1), 30)
    }
    next(0)
  })
}
