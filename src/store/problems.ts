/**
 * Where the store reports a failure no caller is waiting for (a WAL checkpoint, a callback run after a commit): the
 * server's log once the server has one (startServer points it there), standard error before that. One channel for
 * the process, as standard error would be, since these run below any one server's wiring: a process that runs
 * several servers (tests) reports to the last one's log.
 */
import { CONSOLE_FAILURE_LOG, type FailureLog } from '../domain/failure-log.js'

let log: FailureLog = CONSOLE_FAILURE_LOG

export function reportStoreProblem(err: unknown, message: string): void {
  log.error({ err }, message)
}

/** The log the store's unattended failures go to from now on. */
export function reportStoreProblemsTo(to: FailureLog): void {
  log = to
}
