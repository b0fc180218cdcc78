/**
 * The revoke contract: a deployment's command that revokes a key, given as `--revoke` (or `revoke` in the config
 * file). The suite runs it through the shell with a token on its standard input (so no token shows in a process
 * list); the command revokes that token's key and exits 0. The reference implements it as `agentops keys revoke
 * --token-stdin`.
 */
import { commandFailure, runCommand } from './command.js'
import { settingName } from './config.js'

/** How long the revoke command may take: a CLI that opens the store and announces the revoke. */
const REVOKE_TIMEOUT_MS = 60_000

/** Revokes `token`'s key with `command`; resolves with why it failed, or undefined once it exited 0. */
export async function revokeToken(
  command: string,
  token: string,
  timeoutMs = REVOKE_TIMEOUT_MS,
): Promise<string | undefined> {
  const failure = commandFailure(await runCommand(command, timeoutMs, `${token}\n`), timeoutMs)
  return failure && `the revoke command (${settingName('revoke')}) ${failure}`
}
