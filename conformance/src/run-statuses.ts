/**
 * The run statuses the checks wait for and judge. Spec §3 names two, `queued` ("right after start") and
 * `awaiting_approval`; "Complete list of run status values: not shown" and "The status value that follows cancel is
 * not named". The others are the deployment's: the reference profile's names unless the config file declares its
 * own (`runStatuses`), each role one or more names.
 */

/** The roles of the statuses the spec does not name, by the reference profile's name for each. */
export const RUN_STATUS_ROLES = ['running', 'paused', 'succeeded', 'failed', 'cancelled'] as const
export type RunStatusRole = (typeof RUN_STATUS_ROLES)[number]
export type RunStatusNames = Readonly<Record<RunStatusRole, readonly string[]>>

/** The two names of spec §3. */
export const SPEC_RUN_STATUSES = ['queued', 'awaiting_approval'] as const

/** The reference profile's names: each role by its own name. */
export const REFERENCE_RUN_STATUSES: RunStatusNames = {
  running: ['running'],
  paused: ['paused'],
  succeeded: ['succeeded'],
  failed: ['failed'],
  cancelled: ['cancelled'],
}

/** Why declared names cannot be used (undefined: they can): a name in two roles, or one of the spec's own. */
export function runStatusNamesProblem(names: RunStatusNames): string | undefined {
  const seen = new Map<string, string>()
  for (const role of RUN_STATUS_ROLES) {
    for (const name of names[role]) {
      if ((SPEC_RUN_STATUSES as readonly string[]).includes(name))
        return `runStatuses.${role} names "${name}", one of the spec's own statuses (§3)`
      const other = seen.get(name)
      if (other !== undefined)
        return `"${name}" is named for both runStatuses.${other} and runStatuses.${role}`
      seen.set(name, role)
    }
  }
  return undefined
}

/** A deployment's run statuses, asked by role. */
export class RunStatuses {
  constructor(private readonly names: RunStatusNames) {}

  /** Whether `status` is one of the deployment's names for `role`. */
  is(status: unknown, role: RunStatusRole): boolean {
    return typeof status === 'string' && this.names[role].includes(status)
  }

  /** Ended for good: succeeded, failed or cancelled (§3 "cancel: marks the run terminal"). */
  terminal(status: unknown): boolean {
    return this.is(status, 'succeeded') || this.is(status, 'failed') || this.is(status, 'cancelled')
  }

  /** Still going or waiting: queued, running, awaiting approval or paused. */
  live(status: unknown): boolean {
    return (
      status === 'queued' ||
      status === 'awaiting_approval' ||
      this.is(status, 'running') ||
      this.is(status, 'paused')
    )
  }

  /** Where a run stops moving without a control: ended, awaiting approval, or paused. */
  settled(status: unknown): boolean {
    return this.terminal(status) || status === 'awaiting_approval' || this.is(status, 'paused')
  }

  /** Whether the status is one the suite can place: the spec's two or a declared (or the reference's) name. */
  known(status: unknown): boolean {
    return this.terminal(status) || this.live(status)
  }

  /** The names of the roles, for messages. */
  named(...roles: RunStatusRole[]): string {
    return roles.flatMap((r) => this.names[r]).join(', ')
  }

  /**
   * What to say when a run shows a status the suite cannot place: what it is, and the setting that places it. A
   * check meeting one cannot judge the run, so it is skipped (core: the verdict is INCOMPLETE), never failed.
   */
  unknownReason(status: unknown, runId: string): string {
    return `run ${runId} is ${JSON.stringify(status)}, a status the suite cannot place (spec §3 names only queued and awaiting_approval; known: ${this.named(...RUN_STATUS_ROLES)}): declare the deployment's names in runStatuses in --config`
  }
}
