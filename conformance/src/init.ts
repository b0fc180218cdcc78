/**
 * `agentops-conformance init`: writes a commented config file (JSON with `//` comments, which --config reads) for
 * a deployment of one's own: every setting, what it is for, and which checks need it (read from the checks, as
 * --plan reads them), so a team fills in what it has and sees what the rest would add.
 */
import { existsSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import type { Check } from './check.js'
import { TOKENS, type TokenKey } from './config.js'
import { needsOf } from './plan.js'
import { ConfigError } from './types.js'

const TOKEN_PURPOSE: Record<TokenKey, string> = {
  primary: 'the identity most checks act as: every scope, room for about 2,000 requests an hour',
  secondWorkspace:
    'a key in a second workspace: identical 404s for the other workspace’s resources, per-workspace keys',
  narrowScope:
    'a key whose scopes refuse POST /v1/agents (e.g. agents:read only): 403 policy_denied with its details',
  otherScope:
    'a key whose scopes exclude the narrow key’s (e.g. tasks:read): the 403 of what the narrow key may call',
  runsOnly:
    'a key that may start runs and holds no other scope (e.g. runs:write): the gate refuses its run a tool requiring a scope it lacks',
  rateLimited:
    'a key of a workspace with a small burst limit (e.g. 5 per 10 s): 429 at the limit, Retry-After',
  rateLimitedPeer: 'another key of that same small-limit workspace: the limit is per workspace, not per key',
  expired: 'an expired key (one issued to expire a second later will do): 401 for expired tokens',
  revoked: 'a key the deployment has revoked: 401 for revoked tokens (profile)',
  revocable:
    'a key of the primary workspace the suite revokes with the revoke command (the "revoke" key) while it holds connections open: both must end (profile)',
  quotaLimited:
    'a key of a workspace of its own with small quotas (e.g. 1 agent, 3 stored Idempotency-Key answers, 8 KiB for one answer): which refusals a key keeps (profile)',
  standardTier:
    'a key of a workspace on the standard tier with the tier’s own limits (no limits of its own): its hourly window announces 1,000 requests',
  proTier:
    'a key of a workspace on the pro tier with the tier’s own limits (no limits of its own): its hourly window announces 10,000 requests',
}

/** The checks that cannot run without each token, by id. */
function checksNeeding(checks: Check[]): Record<TokenKey, string[]> {
  const out = Object.fromEntries(Object.keys(TOKENS).map((k) => [k, [] as string[]])) as Record<
    TokenKey,
    string[]
  >
  for (const check of checks) for (const role of needsOf(check).tokens) out[role].push(check.id)
  return out
}

const q = JSON.stringify

/** The config file's text. */
export function initConfig(checks: Check[], baseUrl: string, provision: string | undefined): string {
  const needing = checksNeeding(checks)
  const receiverChecks = checks.filter((c) => needsOf(c).receiver).map((c) => c.id)
  const graphqlChecks = checks.filter((c) => needsOf(c).graphql).map((c) => c.id)
  const list = (ids: string[]) => (ids.length > 0 ? ids.join(', ') : 'none (it adds coverage)')
  const token = (key: TokenKey, last = false) =>
    [
      `    // ${TOKEN_PURPOSE[key]}.`,
      key === 'primary'
        ? '    // Needed by every check (or "provision" above).'
        : `    // Needed by ${needing[key].length} checks: ${list(needing[key])}`,
      `    ${q(key)}: ""${last ? '' : ','}`,
    ].join('\n')
  const keys = Object.keys(TOKENS) as TokenKey[]
  return `// agentops-conformance config (JSON with comments). Run: agentops-conformance --config conformance.json
// Check it first without sending more than one probe: agentops-conformance --config conformance.json --plan
// Every setting here can also be a flag or an AGENTOPS_CONFORMANCE_* variable (agentops-conformance --help);
// flags and variables win over this file. Leave out what you do not have: the checks that need it skip, naming it.
{
  // The deployment under test, without /v1.
  "baseUrl": ${q(baseUrl)},

  // One command that prints every identity at once as {"tokens": {"primary": ..., ...}} (the provisioning
  // contract, conformance/README.md). The reference server's is
  //   agentops keys provision-conformance --database-url URL
  // Tokens given below win over the ones it prints. Leave it empty to give tokens by hand.
  "provision": ${q(provision ?? '')},

  // A command that revokes the key of the token it reads on stdin and exits 0 (for the revocable token's check,
  // ${list(needing.revocable)}). The reference server's is
  //   agentops keys revoke --token-stdin --database-url URL
  "revoke": "",

  // A command that reads the primary token on stdin and prints a new key like it, expiring 1 to 60 seconds later, as
  // {"token": ..., "expires_at": "<RFC 3339>"} (stream.expired-key-ends-connections). The reference server's is
  //   agentops keys create --token-stdin --expires-in 5 --json --database-url URL
  "issueExpiring": "",

  "tokens": {
${keys.map((k, i) => token(k, i === keys.length - 1)).join('\n')}
  },

  // The suite's webhook receiver (${receiverChecks.length} checks: ${list(receiverChecks)}).
  // It listens on host:port; the deployment must be able to call url. On another machine than the deployment:
  // host "0.0.0.0", a fixed port, and the URL (a tunnel or public address) that reaches it. A server that refuses
  // private addresses (the reference without AGENTOPS_ALLOW_PRIVATE_WEBHOOKS=1) refuses 127.0.0.1.
  "receiver": { "host": "127.0.0.1", "port": 0 },

  // The deployment's GraphQL endpoint, if it has one (${graphqlChecks.length} core checks of the spec's rules on it:
  // ${list(graphqlChecks)}); without it they do not apply.
  // "graphqlUrl": "https://api.example.com/graphql",

  // Where the spec leaves a choice open that the suite cannot discover, declare yours (conformance/README.md,
  // "Declaring what cannot be discovered"; examples/config.foreign.json declares every one):
  // "paging": { "cursorField": "meta.continuation", "itemsField": "results" },
  // "stream": { "subscribe": { "op": "join", "channels": "{topics}" }, "topic": "records/{connector}" },
  // "rateLimitHeaders": { "burst": { "remaining": "...", "reset": "..." }, "sustained": { "remaining": "...", "reset": "..." } },
  // "approval": { "method": "PUT", "path": "/v1/runs/{run_id}/approvals/{step_id}", "body": { "approved": true } },
  // "signature": { "timestamp": "rfc3339" },
  // "toolRun": { "agent": { "name": "{name}", "behavior": "{behavior}" }, "run": { "inputs": { "steps": "{tools}" } } },
  // Run statuses besides the spec's queued and awaiting_approval, if yours are not the reference's names:
  // "runStatuses": { "running": "in_progress", "succeeded": "completed", "failed": ["errored"], "cancelled": "canceled" },

  // Longest wait for asynchronous effects (runs, webhook deliveries, retries), ms; raise it for a slow backoff.
  "waitMs": 15000,
  // Longest the whole run may take, seconds (0: no bound); checks not started by then skip, naming it.
  "deadline": 0
}
`
}

/** Strips `//` comments outside strings, so a commented config parses as JSON. */
export function stripComments(text: string): string {
  let out = ''
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!
    if (inString) {
      out += ch
      if (ch === '\\') out += text[++i] ?? ''
      else if (ch === '"') inString = false
    } else if (ch === '"') {
      inString = true
      out += ch
    } else if (ch === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++
      out += '\n'
    } else out += ch
  }
  return out
}

export const INIT_HELP = `agentops-conformance init [--base-url URL] [--provision COMMAND] [--output FILE] [--force]

Writes a commented config file for your deployment (default conformance.json; --output - prints it): every
setting, what it is for and which checks need it. Then: agentops-conformance --config conformance.json --plan`

/** Runs `init`; returns the exit code. */
export function runInit(argv: string[], checks: Check[], out: (line: string) => void): number {
  let values: Record<string, string | boolean | undefined>
  try {
    values = parseArgs({
      args: argv,
      options: {
        'base-url': { type: 'string' },
        provision: { type: 'string' },
        output: { type: 'string' },
        force: { type: 'boolean' },
        help: { type: 'boolean' },
      },
      strict: true,
    }).values
  } catch (err) {
    throw new ConfigError(`${(err as Error).message}; see init --help`)
  }
  if (values.help) {
    out(INIT_HELP)
    return 0
  }
  const text = initConfig(
    checks,
    (values['base-url'] as string | undefined) ?? 'https://api.example.com',
    values.provision as string | undefined,
  )
  const file = (values.output as string | undefined) ?? 'conformance.json'
  if (file === '-') {
    out(text)
    return 0
  }
  if (existsSync(file) && !values.force) throw new ConfigError(`${file} exists; --force overwrites it`)
  writeFileSync(file, text)
  out(`wrote ${file}: fill in what your deployment has, then agentops-conformance --config ${file} --plan`)
  return 0
}
