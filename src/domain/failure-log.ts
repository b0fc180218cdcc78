/**
 * Where a failure nobody is waiting for is reported: a worker's pass (scheduler, webhook dispatcher), a change
 * listener or key watcher that threw, a socket handler, a resolver's unexpected error, a stream read that failed.
 * The composition root hands each the server's log (pino's `error` fits); one built alone (tests) writes to
 * standard error. The store, below any one server's wiring, reports through src/store/problems.ts instead.
 */
export interface FailureLog {
  error(fields: { err: unknown } & Record<string, unknown>, message: string): void
}

export const CONSOLE_FAILURE_LOG: FailureLog = {
  error: ({ err, ...fields }, message) => console.error(message, fields, err),
}
