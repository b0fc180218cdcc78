/**
 * The server's log (pino): one JSON object a line on stdout, or pino-pretty's readable lines when stdout is a
 * terminal. Nothing secret is ever passed to it (tokens, webhook secrets, signatures, bodies); the redaction
 * below is a second line of defence for an error object that happens to carry one.
 */
import { destination, type Logger, pino, stdTimeFunctions } from 'pino'
import pretty from 'pino-pretty'
import type { LogLevel } from '../config.js'

export type { Logger }

export interface LoggerOptions {
  level?: LogLevel
  /** Readable lines instead of JSON; default: when stdout is a terminal. */
  pretty?: boolean
  /** Where lines go (tests); default stdout. */
  destination?: NodeJS.WritableStream
}

const REDACT = [
  'token',
  'secret',
  'secrets',
  'authorization',
  'signature',
  'body',
  '*.token',
  '*.secret',
  '*.secrets',
  '*.authorization',
  '*.signature',
  '*.body',
  'headers.authorization',
  '*.headers.authorization',
]

export function createLogger(options: LoggerOptions = {}): Logger {
  const settings = {
    level: options.level ?? 'info',
    base: { pid: process.pid },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: stdTimeFunctions.isoTime,
  }
  if (options.destination) return pino(settings, options.destination)
  if (options.pretty ?? process.stdout.isTTY === true) {
    return pino(settings, pretty({ colorize: true, sync: true, ignore: 'pid' }))
  }
  // Asynchronous writes: a request's line never waits for the pipe; what is buffered is flushed on exit.
  return pino(settings, destination({ dest: 1, sync: false }))
}

/** A logger that writes nothing (tools and tests that build services without a server). */
export const SILENT_LOGGER: Logger = pino({ level: 'silent' })
