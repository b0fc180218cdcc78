/**
 * The server's log (pino): one JSON object a line on stdout, or pino-pretty's readable lines when stdout is a
 * terminal. Nothing secret is ever passed to it (tokens, webhook secrets, signatures, bodies): the request line
 * is built from named fields only, and test/observability/conformance-log.test.ts checks a whole conformance run's
 * log. No pino `redact` on top: its wildcard paths were measured at about 3 % of a cached GET's CPU.
 */
import { type DestinationStream, destination, type Logger, pino } from 'pino'
import pretty from 'pino-pretty'
import type { LogLevel } from '../config.js'
import type { LeaseTelemetry } from '../domain/telemetry.js'

export type { Logger }

export interface LoggerOptions {
  level?: LogLevel
  /** Readable lines instead of JSON; default: when stdout is a terminal. */
  pretty?: boolean
  /** Where lines go (tests); default stdout. */
  destination?: NodeJS.WritableStream
}

export function createLogger(options: LoggerOptions = {}): Logger {
  // `time` is pino's epoch milliseconds: formatting an ISO string per line cost about 1 % of a cached GET.
  const settings = { level: options.level ?? 'info', base: { pid: process.pid } }
  if (options.destination) return pino(settings, options.destination)
  if (options.pretty ?? process.stdout.isTTY === true) {
    return pino(settings, pretty({ colorize: true, sync: true, ignore: 'pid' }))
  }
  return pino(settings, new LineBatch(destination({ dest: 1, sync: true }), BATCH_CHARS, FLUSH_EVERY_MS))
}

/** About 16 kB: a write per 50 request lines or so, well inside a pipe's 64 kB buffer. */
const BATCH_CHARS = 16_384
const FLUSH_EVERY_MS = 1000

/**
 * Lines gathered and handed to sonic-boom (pino.destination: writes to the file descriptor, retries of a full pipe)
 * one batch at a time: a write for about 16 kB of lines, at least once a second so a quiet server's lines are not
 * held back, and the rest synchronously when the process exits or the logger is flushed. Why not sonic-boom's own
 * `minLength` buffering: it appends each line to one string and measures that string's byte length on every write,
 * so a line cost in proportion to what was pending (profiled under a GET load: the largest part of the request
 * log's cost, with the flattened strings as garbage), while here a line costs an array push.
 */
class LineBatch implements DestinationStream {
  private lines: string[] = []
  private chars = 0

  constructor(
    private readonly out: ReturnType<typeof destination>,
    private readonly batchChars: number,
    flushEveryMs: number,
  ) {
    setInterval(() => this.flush(), flushEveryMs).unref()
    // sonic-boom is synchronous here, so the last lines are written before the process ends.
    process.on('exit', () => this.flush())
  }

  write(line: string): void {
    this.lines.push(line)
    this.chars += line.length
    if (this.chars >= this.batchChars) this.flush()
  }

  /** Called by `logger.flush()` too. */
  flush(done?: (err?: Error) => void): void {
    if (this.lines.length > 0) {
      const text = this.lines.join('')
      this.lines = []
      this.chars = 0
      this.out.write(text)
    }
    done?.()
  }
}

/** A logger that writes nothing (tools and tests that build services without a server). */
export const SILENT_LOGGER: Logger = pino({ level: 'silent' })

/**
 * The lifecycle line of a worker pass that took over leases another process let lapse (a replica that died or
 * stalled): which kind and how many, nothing that names a tenant, a run or a delivery.
 */
export function leaseLog(logger: Logger): LeaseTelemetry {
  return { takenOver: (kind, count) => logger.info({ leases: kind, count }, 'replica leases taken over') }
}
