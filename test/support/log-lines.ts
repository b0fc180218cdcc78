import { Writable } from 'node:stream'
import { createLogger, type Logger } from '../../src/observability/logger.js'

/** A server log at `info` kept in memory, one entry per JSON line, for tests that read what the server logged. */
export function logLines(): { logger: Logger; lines: string[] } {
  const lines: string[] = []
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((l) => l !== ''),
      )
      done()
    },
  })
  return { logger: createLogger({ level: 'info', destination }), lines }
}
