/**
 * The server's log (pino): one JSON object a line on stdout, or pino-pretty's readable lines when stdout is a
 * terminal. Nothing secret is ever passed to it (tokens, webhook secrets, signatures, bodies): the request line
 * is built from named fields only, and test/observability/conformance-log.test.ts checks a whole conformance run's
 * log. No pino `redact` on top: its wildcard paths cost a share of every cached GET's CPU (bench:log-line,
 * bench:observability; docs/performance.md).
 */
import { writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import { type DestinationStream, type Logger, pino } from 'pino'
// sonic-boom is CommonJS: Node's ESM import sees its module object, with the class as a property.
import sonicBoom, { type SonicBoom } from 'sonic-boom'
import type { LogLevel } from '../config.js'
import type { LeaseTelemetry } from '../domain/telemetry.js'

export type { Logger }

export interface LoggerOptions {
  level?: LogLevel
  /** Readable lines instead of JSON; default: when stdout is a terminal. */
  pretty?: boolean
  /** Where lines go (tests, bench:log-line); default stdout. */
  destination?: DestinationStream
}

export function createLogger(options: LoggerOptions = {}): Logger {
  // `time` is pino's epoch milliseconds: an ISO string would be formatted on every line of every request.
  const settings = { level: options.level ?? 'info', base: { pid: process.pid } }
  if (options.destination) return pino(settings, options.destination)
  if (options.pretty ?? process.stdout.isTTY === true) {
    // Loaded only here: a server logging JSON (every one not on a terminal) never loads pino-pretty.
    const pretty = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty')
    return pino(settings, pretty.build({ colorize: true, sync: true, ignore: 'pid' }))
  }
  return pino(settings, stdoutBatch())
}

let stdoutLines: LineBatch | undefined

/**
 * stdout's one batch, shared by every logger of the process: a process that builds several servers (tests, an
 * embedding) writes its lines through one buffer, one timer and one exit listener, however many loggers it made.
 */
function stdoutBatch(): LineBatch {
  stdoutLines ??= new LineBatch(
    new sonicBoom.SonicBoom({ fd: 1, sync: true, contentMode: 'buffer' }),
    FLUSH_EVERY_MS,
  )
  return stdoutLines
}

/** About 16 kB: a write per 60 request lines or so, well inside a pipe's 64 kB buffer. */
const BATCH_BYTES = 16_384
const FLUSH_EVERY_MS = 1000
/** The most UTF-8 bytes one UTF-16 code unit of a line can take (a lone surrogate becomes U+FFFD: 3 bytes). */
const MAX_BYTES_PER_UNIT = 3

const LOG_READER_GONE =
  'agentops: the log on stdout lost its reader (EPIPE); the server keeps serving, and its log lines are dropped from now on\n'

/** One line on stderr, when stderr can still take it (a closed stderr is no reason to stop either). */
function tellOperator(text: string): void {
  try {
    writeSync(2, text)
  } catch {
    // Nowhere left to say it.
  }
}

/**
 * Lines gathered and handed to sonic-boom (what pino.destination builds: writes to the file descriptor, retries of a
 * full pipe)
 * one batch at a time: a write for about 16 kB of lines, at least once a second so a quiet server's lines are not
 * held back, and the rest synchronously when the process exits or the logger is flushed.
 *
 * Each line is encoded once, into the batch's bytes, as it arrives, and the batch goes to sonic-boom as a Buffer
 * (its `contentMode: 'buffer'`). Profiled under a GET load, the ways that cost more: sonic-boom's own `minLength`
 * buffering appends each line to one pending string and measures that string's byte length on every write (a line
 * cost in proportion to what was pending); joining kept lines and writing the text made sonic-boom measure it,
 * encode it to write it and encode it again to release it, and kept pino's unflattened line strings alive until
 * the batch was written.
 */
class LineBatch implements DestinationStream {
  private bytes = Buffer.allocUnsafe(BATCH_BYTES)
  private length = 0
  /** Set when whoever read stdout went away (EPIPE): the lines have nowhere to go, and the server keeps serving. */
  private gone = false

  constructor(
    private readonly out: SonicBoom,
    flushEveryMs: number,
  ) {
    // As pino.destination does: a closed pipe ends the log, any other write error is the process's to see. The
    // server keeps serving (a log shipper that died must not take the service with it) and says so once on stderr.
    out.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err
      if (!this.gone) tellOperator(LOG_READER_GONE)
      this.gone = true
    })
    setInterval(() => this.flush(), flushEveryMs).unref()
    // sonic-boom is synchronous here, so the last lines are written before the process ends.
    process.on('exit', () => this.flush())
  }

  write(line: string): void {
    if (this.gone) return
    const most = line.length * MAX_BYTES_PER_UNIT
    if (this.length + most > this.bytes.length) {
      this.flush()
      // A line larger than a batch goes alone.
      if (most > this.bytes.length) {
        this.out.write(Buffer.from(line, 'utf8'))
        return
      }
    }
    this.length += this.bytes.write(line, this.length, 'utf8')
  }

  /** Called by `logger.flush()` too. */
  flush(done?: (err?: Error) => void): void {
    if (this.length > 0 && !this.gone) {
      const batch = this.bytes.subarray(0, this.length)
      // A new batch: sonic-boom may still hold this one (a write it retries).
      this.bytes = Buffer.allocUnsafe(BATCH_BYTES)
      this.length = 0
      this.out.write(batch)
    }
    done?.()
  }
}

declare module 'sonic-boom' {
  /** With `contentMode: 'buffer'` (sonic-boom's README), `write` takes a Buffer; its typings name only strings. */
  interface SonicBoom {
    write(data: Buffer): boolean
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
