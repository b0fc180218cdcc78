/**
 * Where the store reports a failure no caller is waiting for (a WAL checkpoint, a callback run after a commit): the
 * server's log once the server has one (startServer points it there), the console before that. One channel for the
 * process, as standard error would be: a process that runs several servers (tests) reports to the last one's log.
 */
export interface ProblemLog {
  error(fields: { err: unknown }, message: string): void
}

const CONSOLE: ProblemLog = { error: ({ err }, message) => console.error(`[store] ${message}:`, err) }
let log: ProblemLog = CONSOLE

export function reportStoreProblem(err: unknown, message: string): void {
  log.error({ err }, message)
}

/** The log the store's unattended failures go to from now on. */
export function reportStoreProblemsTo(to: ProblemLog): void {
  log = to
}
