/**
 * The short-lived key contract: a deployment's command that issues a key expiring within seconds, given as
 * `--issue-expiring` (or `issueExpiring` in the config file). The suite runs it through the shell with the primary
 * token on its standard input (so no token shows in a process list); the command prints a new key of that token's
 * workspace and scopes as JSON, `{"token": "...", "expires_at": "<RFC 3339>"}`, and exits 0. The reference implements
 * it as `agentops keys create --token-stdin --expires-in 5 --json`.
 */
import { commandFailure, runCommand } from './command.js'
import { settingName } from './config.js'

/** How long the command may take: a CLI that opens the store and writes a key. */
const ISSUE_TIMEOUT_MS = 60_000

/** The shortest and longest life left to the key once the command printed it. */
export const EXPIRING_LIFE_MS = { min: 1_000, max: 60_000 } as const

export interface ExpiringKey {
  token: string
  /** When the key expires, by the deployment's clock (its `expires_at`), as epoch milliseconds. */
  expiresAt: number
}

/** A key from `command`, issued like `token`'s, or why there is none (`{ problem }`). */
export async function issueExpiringKey(
  command: string,
  token: string,
  timeoutMs = ISSUE_TIMEOUT_MS,
  now: () => number = Date.now,
): Promise<ExpiringKey | { problem: string }> {
  const outcome = await runCommand(command, timeoutMs, `${token}\n`)
  const named = `the short-lived key command (${settingName('issue-expiring')})`
  const failure = commandFailure(outcome, timeoutMs)
  if (failure) return { problem: `${named} ${failure}` }
  const { stdout } = outcome
  let printed: unknown
  try {
    printed = JSON.parse(stdout)
  } catch {
    return { problem: `${named} printed no JSON object: ${stdout.trim().slice(0, 200)}` }
  }
  const fields = typeof printed === 'object' && printed !== null ? (printed as Record<string, unknown>) : {}
  const expiresAt = typeof fields.expires_at === 'string' ? Date.parse(fields.expires_at) : Number.NaN
  if (typeof fields.token !== 'string' || fields.token === '' || Number.isNaN(expiresAt))
    return {
      problem: `${named} printed ${stdout.trim().slice(0, 200)}, not {"token": "...", "expires_at": "<RFC 3339>"}`,
    }
  const left = expiresAt - now()
  if (left < EXPIRING_LIFE_MS.min || left > EXPIRING_LIFE_MS.max)
    return {
      problem: `${named} printed a key expiring ${(left / 1000).toFixed(1)} s after it printed it: the check holds connections open across the expiry, so give one that expires ${EXPIRING_LIFE_MS.min / 1000} to ${EXPIRING_LIFE_MS.max / 1000} s later`,
    }
  return { token: fields.token, expiresAt }
}
