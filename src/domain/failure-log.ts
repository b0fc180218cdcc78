/**
 * Where a transport reports a failure nobody is waiting for: a socket handler that threw, a resolver's unexpected
 * error, a stream read that failed. The composition root hands each transport the server's log (pino's `error`
 * fits); a transport built alone (tests) writes to standard error.
 */
export interface FailureLog {
  error(fields: { err: unknown } & Record<string, unknown>, message: string): void
}

export const CONSOLE_FAILURE_LOG: FailureLog = {
  error: ({ err, ...fields }, message) => console.error(message, fields, err),
}
