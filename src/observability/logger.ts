/**
 * The server's log (pino): one JSON object a line on stdout, or pino-pretty's readable lines when stdout is a
 * terminal. Nothing secret is ever passed to it (tokens, webhook secrets, signatures, bodies): the request line
 * is built from named fields only, and test/observability/conformance-log.test.ts checks a whole conformance run's
 * log. No pino `redact` on top: its wildcard paths were measured at about 3 % of a cached GET's CPU.
 */
import { destination, type Logger, pino } from 'pino'
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
  // Buffered, asynchronous writes: lines leave in writes of at least 4 kB (one write per line cost a system call
  // and a thread-pool hop each, measured as the largest part of the log's cost), and at least once a second so a
  // quiet server's lines are not held back; pino flushes what is left when the process exits.
  const stream = destination({ dest: 1, sync: false, minLength: FLUSH_BYTES })
  setInterval(() => stream.flush(), FLUSH_EVERY_MS).unref()
  return pino(settings, stream)
}

const FLUSH_BYTES = 4096
const FLUSH_EVERY_MS = 1000

/** A logger that writes nothing (tools and tests that build services without a server). */
export const SILENT_LOGGER: Logger = pino({ level: 'silent' })

/**
 * The lifecycle line of a worker pass that took over leases another process let lapse (a replica that died or
 * stalled): which kind and how many, nothing that names a tenant, a run or a delivery.
 */
export function leaseLog(logger: Logger): LeaseTelemetry {
  return { takenOver: (kind, count) => logger.info({ leases: kind, count }, 'replica leases taken over') }
}
