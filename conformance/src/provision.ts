/**
 * The provisioning contract: a deployment hands the suite its identities in one step. The suite runs the command
 * given as `--provision` (or `provision` in the config file) through the shell; the command prints one JSON object
 * on stdout, `{"tokens": {"primary": ..., "secondWorkspace": ..., "narrowScope": ..., "otherScope": ...,
 * "rateLimited": ..., "rateLimitedPeer": ..., "expired": ..., "runsOnly": ..., "revoked": ..., "revocable": ...,
 * "quotaLimited": ..., "standardTier": ..., "proTier": ...}}` (every key but `primary` optional; the names of the
 * config file's `tokens`), and exits 0. A token given by flag, variable or config file wins over the provisioned one.
 * The reference implements it as `agentops keys provision-conformance`.
 */
import { commandFailure, runCommand } from './command.js'
import { type SuiteConfig, settingName, TOKENS, type TokenKey } from './config.js'
import { ConfigError } from './types.js'

/** How long the provisioning command may take. */
const PROVISION_TIMEOUT_MS = 120_000

/** Runs `command` and returns the tokens it printed; any failure is a ConfigError naming the command. */
export async function provision(
  command: string,
  timeoutMs = PROVISION_TIMEOUT_MS,
): Promise<Partial<SuiteConfig['tokens']>> {
  const fail = (what: string) =>
    new ConfigError(`the provisioning command (${settingName('provision')}) ${what}: ${command}`)
  const outcome = await runCommand(command, timeoutMs)
  const failure = commandFailure(outcome, timeoutMs)
  if (failure) throw fail(failure)
  return provisionedTokens(outcome.stdout, fail)
}

/**
 * The tokens of a provisioning command's output: its last line that is a JSON object (a command may print progress
 * before it), `{"tokens": {...}}` with the config file's token names. `fail` makes the error naming the command.
 */
export function provisionedTokens(
  stdout: string,
  fail: (what: string) => Error,
): Partial<SuiteConfig['tokens']> & { primary: string } {
  const line = stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.trim().startsWith('{'))
  let parsed: unknown
  try {
    parsed = JSON.parse(line ?? '')
  } catch {
    throw fail('printed no JSON object {"tokens": {...}} on stdout')
  }
  const tokens = (parsed as { tokens?: unknown } | null)?.tokens
  if (tokens === null || typeof tokens !== 'object' || Array.isArray(tokens))
    throw fail('printed JSON without a "tokens" object')
  const out: Partial<SuiteConfig['tokens']> = {}
  for (const [key, value] of Object.entries(tokens)) {
    if (!(key in TOKENS))
      throw fail(`printed an unknown token "${key}" (known: ${Object.keys(TOKENS).join(', ')})`)
    if (typeof value !== 'string' || value === '') throw fail(`printed a token "${key}" that is not a string`)
    out[key as TokenKey] = value
  }
  const primary = out.primary
  if (!primary) throw fail('printed no "primary" token')
  return { ...out, primary }
}

/** The provisioned tokens under the ones given explicitly (a flag, variable or config file wins). */
export function withProvisioned(
  given: SuiteConfig['tokens'],
  provisioned: Partial<SuiteConfig['tokens']>,
): SuiteConfig['tokens'] {
  const merged: SuiteConfig['tokens'] = { ...provisioned, primary: provisioned.primary ?? '' }
  for (const [key, value] of Object.entries(given) as Array<[TokenKey, string | undefined]>)
    if (value) merged[key] = value
  return merged
}
