/**
 * Settings come from (lowest to highest) defaults, the JSON config file, AGENTOPS_CONFORMANCE_* variables and
 * flags. One table drives parsing and `--help`, so every setting is documented where it is defined.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { EMBEDDED_CONTRACT } from './embedded.js'
import { stripComments } from './init.js'
import { natsTarget } from './nats.js'
import {
  REFERENCE_RUN_STATUSES,
  RUN_STATUS_ROLES,
  type RunStatusNames,
  type RunStatusRole,
  runStatusNamesProblem,
} from './run-statuses.js'
import { templateProblem } from './signature.js'
import { DEFAULT_TOOL_RUN, mentionsTools, TOOL_PLACEHOLDERS, type ToolRunDeclaration } from './toolrun.js'
import { ConfigError } from './types.js'

/** This package's root (src/ in the repository, dist/ when installed, sit one level below it). */
export const PACKAGE_ROOT = join(import.meta.dirname, '..')
/** The contract kit's repository, when the suite runs from its `conformance/` workspace. */
export const REPO_ROOT = join(PACKAGE_ROOT, '..')

/** What `--openapi` names when the contract is the one inside the one-file bundle. */
export const BUNDLED_CONTRACT = '(bundled) agent-operations.yaml'

/**
 * The contract the suite validates against: the one inside the bundle, the copy shipped in the package, else the
 * repository's own.
 */
export function defaultContract(): string {
  if (EMBEDDED_CONTRACT !== undefined) return BUNDLED_CONTRACT
  const shipped = join(PACKAGE_ROOT, 'contract', 'agent-operations.yaml')
  return existsSync(shipped) ? shipped : join(REPO_ROOT, 'openapi', 'agent-operations.yaml')
}

export interface ToolHint {
  provider: string
  config?: Record<string, unknown>
}

/** What the suite needs to know about a deployment's own choices where the spec is silent. */
export interface ProfileHints {
  /** Tool providers: one that succeeds, one that fails, one that takes a while (for pause). */
  tools: { succeed: ToolHint; fail: ToolHint; slow: ToolHint }
  /** Agent behaviour that makes every tool call wait for approval. */
  approvalBehavior: string
  /** Ingest policy class the primary workspace accepts. */
  policyClass: string
  /** A request the narrow-scope token is refused (403). */
  narrowDenied: { method: string; path: string; body?: unknown }
}

/** The headers of one rate-limit window, when a deployment names its own (spec §8: "Names ... not shown"). */
export interface WindowHeaders {
  /** Header carrying the requests left in the window. */
  remaining: string
  /** Header carrying the seconds (or Unix time) until the window resets. */
  reset: string
  /** Header carrying the window's quota, when sent. */
  limit?: string
}

/** A GraphQL request of the deployment's own schema: a variable whose value is "{id}" carries the resource's id. */
export interface GraphqlQuery {
  query: string
  variables: Record<string, unknown>
}

/**
 * What a deployment declares where the spec leaves a choice open and the suite cannot find it out by itself
 * (README "Declaring what cannot be discovered"). Every field is optional: without it the suite discovers what it
 * can (the reference profile's choices and the common alternatives) and skips, naming the field, what it cannot.
 */
export interface Declarations {
  /** §8 "The response field that carries the next cursor: not shown". Dotted for nested (`meta.next`). */
  paging: { cursorField?: string; itemsField?: string }
  /**
   * §4 "The messages a client sends to subscribe to stream topics: not shown". `subscribe` is the JSON message,
   * with the string "{topics}" standing for the array of topic names and "{topic}" for the first one; `topic` is
   * a connector's topic name with "{connector}" for its id. `replayWindow`: the most messages a resume replays
   * per topic (the stream's resume window is not shown either); declared, a profile check resumes from before more
   * than that and expects the reference profile's `gap` message. `declared`: the config file declares `subscribe`,
   * so a record the subscriber never receives is the deployment's failure (§4 "The server pushes records, with
   * lineage, as they land"), not a guess of the suite's that missed.
   */
  stream: { subscribe: unknown; topic: string; replayWindow?: number; declared: boolean }
  /** §8 "Burst and sustained headers are present on every response" with "Names ... not shown". */
  rateLimitHeaders?: { burst: WindowHeaders; sustained: WindowHeaders }
  /**
   * The reference profile's approval endpoint, or a deployment's own: "{run_id}" and "{step_id}" are filled in.
   * The spec names approvals (§2 `awaiting`) but no endpoint to give one.
   */
  approval: { method: string; path: string; body?: unknown }
  /** §5.5 "The exact string that is signed and how the timestamp is checked: not shown": the t= form. */
  signatureTimestamp: 'unix' | 'rfc3339' | 'any'
  /**
   * §5 "The exact string that is signed ...: not shown": the signed string as a template over `{t}`, `{body}` (the
   * delivered body without its `signature` member), `{id}` and `{header:NAME}` (signature.ts). Without it the core
   * check discovers the common arrangements.
   */
  signatureTemplate?: string
  /**
   * §6 "Retry count and backoff timing: not shown": the attempts a webhook delivery gets in all before the deployment
   * gives up on it. Declared, a profile check fails every attempt of one delivery and expects exactly that many, the
   * delivery then logged failed with no next attempt.
   */
  webhookMaxAttempts?: number
  /**
   * Where a person opens a run, as the deployment's chat messages and incidents link to it: an absolute http(s)
   * URL with "{run_id}" (§6 "How routing to chat and paging destinations is configured: not shown", what a message
   * says with it). Declared, a profile check expects a Slack message and a PagerDuty incident about a run to link
   * there.
   */
  runLink?: string
  /** The GraphQL surface's URL when the deployment has one (§4 "A GraphQL surface is mentioned"). */
  graphqlUrl?: string
  /**
   * The queries that read one run and one agent by id on that surface (§4: "its shape is not shown"): the
   * tenancy and scope checks send them as the owner, another workspace and a token without the read scope.
   */
  graphqlQueries: { run: GraphqlQuery; agent: GraphqlQuery }
  /**
   * How to make a run whose plan calls given tools (the spec does not say how a plan is chosen): the agent create
   * body and the run start body, with "{name}", "{behavior}", "{tools}", "{tool_ids}", "{tool}", "{tool_id}"
   * (toolrun.ts). Used only where a check needs a run that calls a tool; every other request keeps the spec's bodies.
   */
  toolRun: ToolRunDeclaration
  /**
   * Operations (`METHOD /template`, e.g. "GET /v1/agents") the deployment knowingly does not serve: a core check
   * with a part through one of them passes without that part instead of being `partial` (which makes the verdict
   * INCOMPLETE).
   */
  notServed: string[]
  /**
   * §3 names two run statuses, `queued` and `awaiting_approval` ("Complete list of run status values: not shown"):
   * the deployment's names for the others, by the reference profile's name for each role (run-statuses.ts). Without
   * it the reference profile's; a run showing a status the suite cannot place skips the check that waits on it.
   */
  runStatuses: RunStatusNames
}

export interface SuiteConfig extends Declarations {
  baseUrl: string
  /** The provisioning command (src/provision.ts) that prints the identities, when the deployment has one. */
  provision?: string
  /**
   * The deployment's revoke command (src/revoke.ts): run through the shell with a token on its standard input, it
   * revokes that token's key and exits 0. With `tokens.revocable`, a profile check revokes a key that holds
   * connections open (§5 "How keys are issued and rotated: not shown").
   */
  revoke?: string
  /**
   * The deployment's command for a short-lived key (src/issue-expiring.ts): run through the shell with the primary
   * token on its standard input, it prints a new key of that workspace that expires within seconds, as JSON
   * `{"token", "expires_at"}`. A profile check holds connections open with it across its expiry.
   */
  issueExpiring?: string
  /** --deadline: the longest the whole run may take, seconds. */
  deadlineSeconds?: number
  /** --reference-port: the port the reference server listens on. */
  referencePort?: number
  /**
   * --nats-url: a NATS server the suite subscribes at and the deployment's event-bus destination publishes to
   * (`nats://[token@|user:password@]host[:port]`); without it `destinations.event-bus` skips.
   */
  natsUrl?: string
  streamUrl: string
  openapiPath: string
  tokens: {
    primary: string
    secondWorkspace?: string
    narrowScope?: string
    /** Scopes that exclude the narrow token's: refused where the narrow token is allowed (the 403 it cannot get). */
    otherScope?: string
    /** May start runs (and nothing a tool of the suite's requires): the policy gate refuses its runs that tool. */
    runsOnly?: string
    rateLimited?: string
    rateLimitedPeer?: string
    expired?: string
    /** A key its deployment revoked: refused 401 (profile: how keys are revoked is §5's gap). */
    revoked?: string
    /** A key of the primary workspace the suite revokes with the `revoke` command while it holds connections open. */
    revocable?: string
    /**
     * A key of a workspace of its own with small quotas on what it keeps (the reference's: 1 agent, 3 stored
     * Idempotency-Key answers, 8 KiB for one answer): which refusals a key keeps (profile).
     */
    quotaLimited?: string
    /** A key of a workspace on the standard tier with the tier's own limits (§8: 1,000 requests per hour). */
    standardTier?: string
    /** A key of a workspace on the pro tier with the tier's own limits (§8: 10,000 requests per hour). */
    proTier?: string
  }
  /** Requests the 429 search may send with the rate-limited token before giving up. */
  rateLimitSearch: number
  /** Longest wait for Retry-After recovery, in seconds. */
  maxRetryAfterWait: number
  /** Longest single wait the pacing honours (the deployment's rate-limit headers), in seconds. */
  paceMaxWait: number
  receiver: { host: string; port: number; url?: string }
  profile: ProfileHints
  budget: number
  timeoutMs: number
  waitMs: number
  seed: number
  fuzzRuns: number
  strictProfile: boolean
  /** INCOMPLETE (core checks skipped or left out) exits 0 instead of 3: for runs that skip knowingly. */
  allowIncomplete: boolean
  /** The run stops at the first core failure: the checks not yet begun are skipped naming it (a mutation killer). */
  bail: boolean
  /** With `bail`: check ids that run first within their group (core, then profile), in this order. */
  first: string[]
  only: string[]
  /** Check id prefixes left out of the run (applied after `only`). */
  skip: string[]
  prefix: string
  reports: { junit?: string; json?: string; markdown?: string }
  verbose: boolean
}

export type TokenKey = keyof SuiteConfig['tokens']

/** Whether `notServed` lists an operation (`METHOD /template`; parameter names do not matter). */
export function declaredAbsent(config: Pick<Declarations, 'notServed'>, operation: string): boolean {
  const shape = (op: string) => op.replace(/\{[^}]*\}/g, '{}')
  return config.notServed.some((op) => shape(op) === shape(operation))
}

/** Each token: what it is, and the flag and variable that set it (skip reasons and errors name these). */
export const TOKENS: Record<TokenKey, { what: string; flag: string }> = {
  primary: { what: 'primary token', flag: 'token' },
  secondWorkspace: { what: 'second-workspace token', flag: 'second-token' },
  narrowScope: { what: 'narrow-scope token', flag: 'narrow-token' },
  otherScope: { what: 'other-scope token', flag: 'other-scope-token' },
  runsOnly: { what: 'runs-only token', flag: 'runs-only-token' },
  rateLimited: { what: 'rate-limited token', flag: 'limited-token' },
  rateLimitedPeer: { what: 'rate-limited peer token', flag: 'limited-peer-token' },
  expired: { what: 'expired token', flag: 'expired-token' },
  revoked: { what: 'revoked token', flag: 'revoked-token' },
  revocable: { what: 'revocable token', flag: 'revocable-token' },
  quotaLimited: { what: 'quota-limited token', flag: 'quota-limited-token' },
  standardTier: { what: 'standard-tier token', flag: 'standard-tier-token' },
  proTier: { what: 'pro-tier token', flag: 'pro-tier-token' },
}

/** `--flag / AGENTOPS_CONFORMANCE_VAR` for a setting, as messages name it. */
export function settingName(flag: string): string {
  const s = SETTINGS.find((x) => x.flag === flag)
  return s ? `--${s.flag} / AGENTOPS_CONFORMANCE_${s.env}` : `--${flag}`
}

export function tokenName(key: TokenKey): string {
  return `${TOKENS[key].what} (${settingName(TOKENS[key].flag)})`
}

export interface CliOptions {
  config: SuiteConfig
  reference: boolean
  list: boolean
  help: boolean
  plan: boolean
  version: boolean
}

type Kind = 'string' | 'int' | 'bool' | 'list'

interface Setting {
  flag: string
  env: string
  kind: Kind
  help: string
  /** Dotted path in the config file, when the file may set it. */
  file?: string
}

export const SETTINGS: Setting[] = [
  {
    flag: 'base-url',
    env: 'BASE_URL',
    kind: 'string',
    file: 'baseUrl',
    help: 'Service address without /v1, e.g. https://api.example.com',
  },
  {
    flag: 'stream-url',
    env: 'STREAM_URL',
    kind: 'string',
    file: 'streamUrl',
    help: 'WebSocket address without /v1 (default: base URL with ws/wss)',
  },
  {
    flag: 'graphql-url',
    env: 'GRAPHQL_URL',
    kind: 'string',
    file: 'graphqlUrl',
    help: 'URL of the deployment\'s GraphQL surface, when it has one: every GraphQL check sends there (graphql-ws over ws/wss), its spec-rule checks core (else each is "not declared")',
  },
  {
    flag: 'nats-url',
    env: 'NATS_URL',
    kind: 'string',
    file: 'natsUrl',
    help: 'A NATS server both the suite and the deployment reach, nats://[TOKEN@]host[:port] or nats://USER:PASSWORD@host[:port]: destinations.event-bus creates a nats destination publishing there and judges what arrives (else skipped); --reference starts a local nats-server when one is installed',
  },
  {
    flag: 'config',
    env: 'CONFIG',
    kind: 'string',
    help: 'JSON config file (tokens, receiver, profile hints; see conformance/README.md)',
  },
  {
    flag: 'reference',
    env: 'REFERENCE',
    kind: 'bool',
    help: 'Start the reference server in a temp dir, provision tokens with its CLI, run, stop it',
  },
  {
    flag: 'provision',
    env: 'PROVISION',
    kind: 'string',
    file: 'provision',
    help: 'Command (run through the shell) that prints the identities as {"tokens": {...}}, e.g. "agentops keys provision-conformance --database-url URL"; given tokens win',
  },
  {
    flag: 'revoke',
    env: 'REVOKE',
    kind: 'string',
    file: 'revoke',
    help: 'Command (run through the shell) that revokes the key of the token it reads on stdin and exits 0, e.g. "agentops keys revoke --token-stdin --database-url URL": with the revocable token, a key revoked while it holds connections open (profile; skipped when absent)',
  },
  {
    flag: 'issue-expiring',
    env: 'ISSUE_EXPIRING',
    kind: 'string',
    file: 'issueExpiring',
    help: 'Command (run through the shell) that reads the primary token on stdin and prints a new key of its workspace, with its scopes, expiring 1 to 60 seconds after it printed it, as JSON {"token", "expires_at"}, e.g. "agentops keys create --token-stdin --expires-in 5 --json --database-url URL": a key that expires while it holds connections open (profile; skipped when absent)',
  },
  {
    flag: 'token',
    env: 'TOKEN',
    kind: 'string',
    file: 'tokens.primary',
    help: 'Bearer token of the primary identity (every scope)',
  },
  {
    flag: 'second-token',
    env: 'SECOND_TOKEN',
    kind: 'string',
    file: 'tokens.secondWorkspace',
    help: 'Token in a second workspace (404 scoping checks)',
  },
  {
    flag: 'narrow-token',
    env: 'NARROW_TOKEN',
    kind: 'string',
    file: 'tokens.narrowScope',
    help: 'Token with narrow scopes, refused the --narrow-denied request (403 checks)',
  },
  {
    flag: 'other-scope-token',
    env: 'OTHER_SCOPE_TOKEN',
    kind: 'string',
    file: 'tokens.otherScope',
    help: "Token whose scopes exclude the narrow token's (e.g. tasks:read only): the 403 of what the narrow token may call",
  },
  {
    flag: 'runs-only-token',
    env: 'RUNS_ONLY_TOKEN',
    kind: 'string',
    file: 'tokens.runsOnly',
    help: 'Token of the primary workspace that may start runs and holds no scope beyond (e.g. runs:write only): the policy gate refuses its run a tool whose required_scopes it lacks',
  },
  {
    flag: 'limited-token',
    env: 'LIMITED_TOKEN',
    kind: 'string',
    file: 'tokens.rateLimited',
    help: 'Token of a workspace with a small rate limit (429 checks)',
  },
  {
    flag: 'limited-peer-token',
    env: 'LIMITED_PEER_TOKEN',
    kind: 'string',
    file: 'tokens.rateLimitedPeer',
    help: 'Another token of that same small-limit workspace (per-workspace scope)',
  },
  {
    flag: 'expired-token',
    env: 'EXPIRED_TOKEN',
    kind: 'string',
    file: 'tokens.expired',
    help: 'An expired token (401 check; skipped when absent)',
  },
  {
    flag: 'revoked-token',
    env: 'REVOKED_TOKEN',
    kind: 'string',
    file: 'tokens.revoked',
    help: 'A token the deployment has revoked (401 profile check; skipped when absent)',
  },
  {
    flag: 'revocable-token',
    env: 'REVOCABLE_TOKEN',
    kind: 'string',
    file: 'tokens.revocable',
    help: 'Token of the primary workspace the suite revokes (with --revoke) while it holds a stream and a graphql-ws connection open: both must end (profile; skipped when absent)',
  },
  {
    flag: 'quota-limited-token',
    env: 'QUOTA_LIMITED_TOKEN',
    kind: 'string',
    file: 'tokens.quotaLimited',
    help: 'Token of a workspace of its own with small quotas (1 agent, 3 stored Idempotency-Key answers, 8 KiB for one answer; the suite deletes its agents): which refusals a key keeps (profile; skipped when absent)',
  },
  {
    flag: 'standard-tier-token',
    env: 'STANDARD_TIER_TOKEN',
    kind: 'string',
    file: 'tokens.standardTier',
    help: "Token of a workspace on the standard tier with that tier's own limits: its hourly window announces 1,000 requests (§8; ratelimit.tier-limits, core)",
  },
  {
    flag: 'pro-tier-token',
    env: 'PRO_TIER_TOKEN',
    kind: 'string',
    file: 'tokens.proTier',
    help: "Token of a workspace on the pro tier with that tier's own limits: its hourly window announces 10,000 requests (§8; ratelimit.tier-limits, core)",
  },
  {
    flag: 'rate-limit-search',
    env: 'RATE_LIMIT_SEARCH',
    kind: 'int',
    file: 'rateLimitSearch',
    help: 'Requests the 429 search may spend with the limited token (default 60)',
  },
  {
    flag: 'max-retry-after',
    env: 'MAX_RETRY_AFTER',
    kind: 'int',
    file: 'maxRetryAfterWait',
    help: 'Longest Retry-After the recovery check waits, seconds (default 20)',
  },
  {
    flag: 'pace-max-wait',
    env: 'PACE_MAX_WAIT',
    kind: 'int',
    file: 'paceMaxWait',
    help: 'Longest wait for a used-up rate-limit quota to reset before a request, seconds (default 120; 0 = never wait)',
  },
  {
    flag: 'receiver-host',
    env: 'RECEIVER_HOST',
    kind: 'string',
    file: 'receiver.host',
    help: 'Address the webhook receiver listens on (default 127.0.0.1)',
  },
  {
    flag: 'receiver-port',
    env: 'RECEIVER_PORT',
    kind: 'int',
    file: 'receiver.port',
    help: 'Port the webhook receiver listens on (default 0 = any free port)',
  },
  {
    flag: 'receiver-url',
    env: 'RECEIVER_URL',
    kind: 'string',
    file: 'receiver.url',
    help: 'URL the deployment calls the receiver at (default http://host:port/hooks)',
  },
  {
    flag: 'budget',
    env: 'BUDGET',
    kind: 'int',
    file: 'budget',
    help: 'Most requests the whole run may send (default 2500)',
  },
  {
    flag: 'timeout-ms',
    env: 'TIMEOUT_MS',
    kind: 'int',
    file: 'timeoutMs',
    help: 'Timeout of every request, ms (default 10000)',
  },
  {
    flag: 'wait-ms',
    env: 'WAIT_MS',
    kind: 'int',
    file: 'waitMs',
    help: 'Longest wait for asynchronous effects (runs, deliveries), ms (default 15000)',
  },
  {
    flag: 'seed',
    env: 'SEED',
    kind: 'int',
    file: 'seed',
    help: 'Seed of the generated bad bodies (default: random, printed)',
  },
  {
    flag: 'fuzz-runs',
    env: 'FUZZ_RUNS',
    kind: 'int',
    file: 'fuzzRuns',
    help: 'Generated bad bodies per operation (default 12)',
  },
  {
    flag: 'strict-profile',
    env: 'STRICT_PROFILE',
    kind: 'bool',
    file: 'strictProfile',
    help: 'Profile failures also make the exit code 1',
  },
  {
    flag: 'allow-incomplete',
    env: 'ALLOW_INCOMPLETE',
    kind: 'bool',
    file: 'allowIncomplete',
    help: 'An INCOMPLETE verdict (core checks skipped for want of a token or setting, or left out) exits 0, not 3',
  },
  {
    flag: 'bail',
    env: 'BAIL',
    kind: 'bool',
    help: 'Stop at the first core failure: checks not yet begun are skipped naming it, the verdict is NOT CONFORMANT (for a mutation run, where one failure is the answer)',
  },
  {
    flag: 'first',
    env: 'FIRST',
    kind: 'list',
    help: 'With --bail: these checks (ids, comma-separated) run first within their group, core then profile, in this order (a mutation run puts the checks that killed most of its mutants first, since the first failure ends the run)',
  },
  {
    flag: 'only',
    env: 'ONLY',
    kind: 'list',
    help: 'Run only checks whose id starts with one of these (comma-separated)',
  },
  {
    flag: 'skip',
    env: 'SKIP',
    kind: 'list',
    help: 'Leave out checks whose id starts with one of these (comma-separated)',
  },
  {
    flag: 'openapi',
    env: 'OPENAPI',
    kind: 'string',
    file: 'openapi',
    help: 'OpenAPI document to validate bodies against (default: the kit’s own)',
  },
  { flag: 'junit', env: 'JUNIT', kind: 'string', help: 'Write a JUnit XML report to FILE' },
  { flag: 'json', env: 'JSON', kind: 'string', help: 'Write a JSON report to FILE' },
  { flag: 'markdown', env: 'MARKDOWN', kind: 'string', help: 'Write a Markdown summary to FILE' },
  { flag: 'list', env: 'LIST', kind: 'bool', help: 'Print the checks and exit' },
  {
    flag: 'plan',
    env: 'PLAN',
    kind: 'bool',
    help: 'Dry run: after one reachability probe, list the checks that will run, be skipped (with the setting that runs them) or not apply; sends nothing else',
  },
  {
    flag: 'deadline',
    env: 'DEADLINE',
    kind: 'int',
    file: 'deadline',
    help: 'Longest the whole run may take, seconds (default: none); checks not started by then are skipped naming it, and the verdict still comes',
  },
  {
    flag: 'reference-port',
    env: 'REFERENCE_PORT',
    kind: 'int',
    help: 'With --reference: the port the reference server listens on (default: any free port)',
  },
  { flag: 'version', env: 'VERSION', kind: 'bool', help: 'Print the version and exit' },
  { flag: 'verbose', env: 'VERBOSE', kind: 'bool', help: 'Print every request' },
  { flag: 'help', env: 'HELP', kind: 'bool', help: 'Show this help' },
]

export function helpText(): string {
  const rows = SETTINGS.map((s) => {
    const arg = s.kind === 'bool' ? '' : s.kind === 'int' ? ' N' : s.kind === 'list' ? ' A,B' : ' VALUE'
    const head = `  --${s.flag}${arg}`.padEnd(30)
    return `${head}${s.help}\n${' '.repeat(30)}env AGENTOPS_CONFORMANCE_${s.env}`
  })
  return `agentops-conformance: checks a deployment of the Agent Operations API against its spec

Usage:
  agentops-conformance --base-url URL --config FILE [options]
  agentops-conformance --reference            zero-setup demo against the reference server

Options (flags win over environment variables, which win over the config file):
${rows.join('\n')}

Every run ends with its verdict, one line, and its exit code:
  CONFORMANT      0  every core check ran and passed
  NOT CONFORMANT  1  a core check failed (or a profile check, with --strict-profile); 1 also for an internal error
  INCOMPLETE      3  no core check failed, but some were skipped (the line names the settings that would run
                     them) or left out by --only/--skip; --allow-incomplete makes this 0
  2 is a configuration error (unreachable URL, a refused token, a bad flag): no run, no verdict.`
}

/**
 * Every key a config file may hold (dotted), beyond the settings that carry a `file` key: the declarations and
 * the profile hints. A key ending in `*` is an object whose inside is the deployment's own (a request body, a
 * message, query variables). conformance/README.md's table of config keys lists exactly these and the settings'
 * (a test holds the two together), and a file with any other key is refused, naming it.
 */
export const DECLARATION_KEYS: string[] = [
  'paging.cursorField',
  'paging.itemsField',
  'stream.subscribe*',
  'stream.topic',
  'stream.replayWindow',
  'webhooks.maxAttempts',
  'destinations.runLink',
  'rateLimitHeaders.burst.remaining',
  'rateLimitHeaders.burst.reset',
  'rateLimitHeaders.burst.limit',
  'rateLimitHeaders.sustained.remaining',
  'rateLimitHeaders.sustained.reset',
  'rateLimitHeaders.sustained.limit',
  'approval.method',
  'approval.path',
  'approval.body*',
  'signature.timestamp',
  'signature.signed',
  'graphqlQueries.run.query',
  'graphqlQueries.run.variables*',
  'graphqlQueries.agent.query',
  'graphqlQueries.agent.variables*',
  'toolRun.agent*',
  'toolRun.run*',
  'notServed',
  'runStatuses.running',
  'runStatuses.paused',
  'runStatuses.succeeded',
  'runStatuses.failed',
  'runStatuses.cancelled',
  'profile.tools.succeed.provider',
  'profile.tools.fail.provider',
  'profile.tools.fail.config*',
  'profile.tools.slow.provider',
  'profile.tools.slow.config*',
  'profile.approvalBehavior',
  'profile.policyClass',
  'profile.narrowDenied.method',
  'profile.narrowDenied.path',
  'profile.narrowDenied.body*',
]

/** Every key a config file may hold: the settings' `file` keys and the declarations'. */
export function configFileKeys(): string[] {
  return [...SETTINGS.flatMap((s) => (s.file ? [s.file] : [])), ...DECLARATION_KEYS]
}

/** The dotted keys of a config file that no setting or declaration reads. */
export function unknownConfigKeys(file: Raw): string[] {
  const keys = configFileKeys()
  const exact = new Set(keys.filter((k) => !k.endsWith('*')))
  const open = keys.filter((k) => k.endsWith('*')).map((k) => k.slice(0, -1))
  const unknown: string[] = []
  const walk = (node: Raw, prefix: string) => {
    for (const [k, v] of Object.entries(node)) {
      const key = prefix ? `${prefix}.${k}` : k
      if (exact.has(key) || open.includes(key)) continue
      if (
        v !== null &&
        typeof v === 'object' &&
        !Array.isArray(v) &&
        keys.some((x) => x.startsWith(`${key}.`))
      )
        walk(v as Raw, key)
      else unknown.push(key)
    }
  }
  walk(file, '')
  return unknown
}

const DEFAULT_DECLARATIONS: Declarations = {
  paging: {},
  stream: {
    subscribe: { type: 'subscribe', topics: '{topics}' },
    topic: 'connector:{connector}',
    declared: false,
  },
  approval: {
    method: 'POST',
    path: '/v1/runs/{run_id}/steps/{step_id}/approval',
    body: { decision: 'approve' },
  },
  signatureTimestamp: 'any',
  toolRun: DEFAULT_TOOL_RUN,
  notServed: [],
  runStatuses: REFERENCE_RUN_STATUSES,
  // The reference profile's schema (POST /v1/graphql): snake_case fields as in REST.
  graphqlQueries: {
    run: { query: 'query($id: ID!) { run(id: $id) { run_id agent_id status } }', variables: { id: '{id}' } },
    agent: { query: 'query($id: ID!) { agent(id: $id) { agent_id name } }', variables: { id: '{id}' } },
  },
}

/** Reads the declarations of the config file, checking their shapes (a wrong one is a ConfigError). */
function declarations(file: Raw): Declarations {
  const section = (key: string): Raw => {
    const v = file[key]
    if (v === undefined) return {}
    if (v === null || typeof v !== 'object' || Array.isArray(v))
      throw new ConfigError(`config file ${key} must be an object`)
    return v as Raw
  }
  const text = (where: string, v: unknown): string | undefined => {
    if (v === undefined) return undefined
    if (typeof v !== 'string' || v === '')
      throw new ConfigError(`config file ${where} must be a non-empty string`)
    return v
  }
  const paging = section('paging')
  const stream = section('stream')
  const toolRun = section('toolRun')
  const gqlQueries = section('graphqlQueries')
  const gqlQuery = (key: 'run' | 'agent'): GraphqlQuery => {
    const v = gqlQueries[key]
    if (v === undefined) return DEFAULT_DECLARATIONS.graphqlQueries[key]
    const where = `graphqlQueries.${key}`
    if (v === null || typeof v !== 'object' || Array.isArray(v))
      throw new ConfigError(`config file ${where} must be an object with "query" and "variables"`)
    const q = v as Raw
    const query = text(`${where}.query`, q.query)
    if (query === undefined) throw new ConfigError(`config file ${where} needs a "query"`)
    const variables = q.variables
    // The id goes in as a variable only: "{id}" inside the query text could be a selection set.
    if (
      variables === null ||
      typeof variables !== 'object' ||
      Array.isArray(variables) ||
      !JSON.stringify(variables).includes('"{id}"')
    )
      throw new ConfigError(
        `config file ${where}.variables must be an object with a variable whose value is "{id}" (the ${key}'s id)`,
      )
    return { query, variables: variables as Raw }
  }
  const approval = section('approval')
  const signature = section('signature')
  const limits = section('rateLimitHeaders')
  const window = (name: 'burst' | 'sustained'): WindowHeaders => {
    const w = (limits[name] ?? {}) as Raw
    const remaining = text(`rateLimitHeaders.${name}.remaining`, w.remaining)
    const reset = text(`rateLimitHeaders.${name}.reset`, w.reset)
    if (!remaining || !reset)
      throw new ConfigError(`config file rateLimitHeaders.${name} needs "remaining" and "reset" header names`)
    const limit = text(`rateLimitHeaders.${name}.limit`, w.limit)
    return {
      remaining: remaining.toLowerCase(),
      reset: reset.toLowerCase(),
      ...(limit ? { limit: limit.toLowerCase() } : {}),
    }
  }
  const signed = text('signature.signed', signature.signed)
  const signedProblem = signed === undefined ? undefined : templateProblem(signed)
  if (signedProblem) throw new ConfigError(`config file signature.signed ${signedProblem}`)
  const form = signature.timestamp ?? 'any'
  if (form !== 'unix' && form !== 'rfc3339' && form !== 'any')
    throw new ConfigError('config file signature.timestamp must be "unix", "rfc3339" or "any"')
  const cursorField = text('paging.cursorField', paging.cursorField)
  const itemsField = text('paging.itemsField', paging.itemsField)
  const topic = text('stream.topic', stream.topic)
  if (topic !== undefined && !topic.includes('{connector}'))
    throw new ConfigError('config file stream.topic must contain "{connector}"')
  const approvalPath = text('approval.path', approval.path)
  const template = (key: 'agent' | 'run'): Raw => {
    const v = toolRun[key]
    if (v === undefined) return structuredClone(DEFAULT_TOOL_RUN[key])
    if (v === null || typeof v !== 'object' || Array.isArray(v))
      throw new ConfigError(
        `config file toolRun.${key} must be an object (the ${key === 'agent' ? 'agent create' : 'run start'} body)`,
      )
    return v as Raw
  }
  const declaredToolRun = { agent: template('agent'), run: template('run') }
  if (!mentionsTools(declaredToolRun))
    throw new ConfigError(
      `config file toolRun names no tool: its agent or run body must use one of ${TOOL_PLACEHOLDERS.map((p) => `"${p}"`).join(', ')}, or the runs it makes call nothing`,
    )
  const replayWindow = stream.replayWindow
  if (
    replayWindow !== undefined &&
    (typeof replayWindow !== 'number' || !Number.isSafeInteger(replayWindow) || replayWindow < 1)
  )
    throw new ConfigError('config file stream.replayWindow must be a positive integer')
  const maxAttempts = section('webhooks').maxAttempts
  if (
    maxAttempts !== undefined &&
    (typeof maxAttempts !== 'number' || !Number.isSafeInteger(maxAttempts) || maxAttempts < 1)
  )
    throw new ConfigError('config file webhooks.maxAttempts must be a positive integer')
  const runLink = text('destinations.runLink', section('destinations').runLink)
  if (runLink !== undefined) {
    const problem = runLinkProblem(runLink)
    if (problem) throw new ConfigError(`config file destinations.runLink ${problem}`)
  }
  const absent = file.notServed ?? []
  if (
    !Array.isArray(absent) ||
    absent.some((op) => typeof op !== 'string' || !/^(GET|POST|PUT|PATCH|DELETE) \/\S*$/.test(op))
  )
    throw new ConfigError(
      'config file notServed must be an array of operations written "METHOD /path/{param}" (e.g. "GET /v1/agents")',
    )
  const runStatuses = declaredRunStatuses(section('runStatuses'))
  return {
    notServed: absent as string[],
    runStatuses,
    paging: { ...(cursorField ? { cursorField } : {}), ...(itemsField ? { itemsField } : {}) },
    stream: {
      subscribe: stream.subscribe ?? DEFAULT_DECLARATIONS.stream.subscribe,
      topic: topic ?? DEFAULT_DECLARATIONS.stream.topic,
      ...(replayWindow !== undefined ? { replayWindow } : {}),
      declared: stream.subscribe !== undefined,
    },
    ...(file.rateLimitHeaders !== undefined
      ? { rateLimitHeaders: { burst: window('burst'), sustained: window('sustained') } }
      : {}),
    approval: approvalPath
      ? {
          method: text('approval.method', approval.method) ?? 'POST',
          path: approvalPath,
          ...(approval.body !== undefined ? { body: approval.body } : {}),
        }
      : DEFAULT_DECLARATIONS.approval,
    signatureTimestamp: form,
    ...(signed ? { signatureTemplate: signed } : {}),
    ...(maxAttempts !== undefined ? { webhookMaxAttempts: maxAttempts } : {}),
    ...(runLink !== undefined ? { runLink } : {}),
    toolRun: declaredToolRun,
    graphqlQueries: { run: gqlQuery('run'), agent: gqlQuery('agent') },
  }
}

/** The run statuses a config file declares, each role a name or a list of names, over the reference's. */
function declaredRunStatuses(section: Raw): RunStatusNames {
  const names = Object.fromEntries(
    RUN_STATUS_ROLES.map((role) => {
      const v = section[role]
      if (v === undefined) return [role, REFERENCE_RUN_STATUSES[role]]
      const list = typeof v === 'string' ? [v] : v
      if (!Array.isArray(list) || list.length === 0 || list.some((n) => typeof n !== 'string' || n === ''))
        throw new ConfigError(
          `config file runStatuses.${role} must be a status name or a non-empty array of them`,
        )
      return [role, list as string[]]
    }),
  ) as Record<RunStatusRole, string[]>
  const problem = runStatusNamesProblem(names)
  if (problem) throw new ConfigError(`config file ${problem}`)
  return names
}

/** Why a declared run link is unusable (undefined: it is usable): it needs "{run_id}" and an http(s) URL around it. */
export function runLinkProblem(template: string): string | undefined {
  if (!template.includes('{run_id}')) return 'must contain "{run_id}"'
  try {
    const url = new URL(template.replaceAll('{run_id}', 'run_1'))
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL'
  } catch {
    return 'must be an absolute http or https URL'
  }
  return undefined
}

const DEFAULT_PROFILE: ProfileHints = {
  tools: {
    // No `config` for the tool most checks use: a registration carries the spec's fields only (§2), so a server
    // that refuses unknown fields still registers it. The fail and slow providers are profile hints by nature.
    succeed: { provider: 'builtin:echo' },
    fail: { provider: 'builtin:fail', config: { message: 'conformance: planned failure' } },
    slow: { provider: 'builtin:delay', config: { delay_ms: 400 } },
  },
  approvalBehavior: 'supervised',
  policyClass: 'public',
  narrowDenied: { method: 'POST', path: '/v1/agents', body: { name: 'conf-narrow', behavior: 'autonomous' } },
}

type Raw = Record<string, unknown>

function get(raw: Raw, dotted: string): unknown {
  let node: unknown = raw
  for (const part of dotted.split('.')) node = (node as Raw | undefined)?.[part]
  return node
}

function coerce(setting: Setting, value: unknown, source: string): unknown {
  if (value === undefined) return undefined
  const where = `${source} (${setting.flag})`
  switch (setting.kind) {
    case 'bool':
      if (typeof value === 'boolean') return value
      if (value === '1' || value === 'true') return true
      if (value === '0' || value === 'false' || value === '') return false
      throw new ConfigError(`${where} must be true or false, got "${String(value)}"`)
    case 'int': {
      const n = typeof value === 'number' ? value : Number(value)
      if (!Number.isSafeInteger(n) || n < 0)
        throw new ConfigError(`${where} must be a non-negative integer, got "${String(value)}"`)
      return n
    }
    case 'list':
      return (Array.isArray(value) ? value.map(String) : String(value).split(','))
        .map((s) => s.trim())
        .filter((s) => s.length > 0)
    default:
      if (typeof value !== 'string') throw new ConfigError(`${where} must be a string`)
      return value
  }
}

function readConfigFile(path: string): Raw {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`)
  }
  try {
    // JSON with `//` comments, as `agentops-conformance init` writes it.
    const parsed = JSON.parse(stripComments(text)) as unknown
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error('not a JSON object')
    return parsed as Raw
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(err as Error).message}`)
  }
}

function validUrl(value: string, name: string, protocols: string[]): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ConfigError(`${name} is not a URL: "${value}"`)
  }
  if (!protocols.includes(url.protocol))
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}: "${value}"`)
  return value.replace(/\/+$/, '')
}

/**
 * Resolves every setting. `baseUrl` and `tokens.primary` may be absent only with --reference or --list (the
 * caller fills them in), so they are checked by `requireTarget`.
 */
export function resolveConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): CliOptions {
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({
      args: argv,
      options: Object.fromEntries(
        SETTINGS.map((s) => [
          s.flag,
          { type: s.kind === 'bool' ? ('boolean' as const) : ('string' as const) },
        ]),
      ),
      strict: true,
      allowPositionals: false,
    })
  } catch (err) {
    throw new ConfigError(`${(err as Error).message}; see --help`)
  }
  const flags = parsed.values as Record<string, string | boolean | undefined>
  const envValue = (s: Setting) => env[`AGENTOPS_CONFORMANCE_${s.env}`]
  const configPath = (flags.config as string | undefined) ?? env.AGENTOPS_CONFORMANCE_CONFIG
  const file = configPath ? readConfigFile(configPath) : {}
  const unknown = unknownConfigKeys(file)
  if (unknown.length > 0)
    throw new ConfigError(
      `config file ${configPath} has keys the suite does not read: ${unknown.join(', ')} (conformance/README.md "Config file keys" lists every key)`,
    )

  const values = new Map<string, unknown>()
  for (const s of SETTINGS) {
    const fromFlag = coerce(s, flags[s.flag], 'flag')
    const fromEnv = coerce(s, envValue(s), `AGENTOPS_CONFORMANCE_${s.env}`)
    const fromFile = s.file ? coerce(s, get(file, s.file), `config file ${s.file}`) : undefined
    values.set(s.flag, fromFlag ?? fromEnv ?? fromFile)
  }
  const str = (k: string) => values.get(k) as string | undefined
  const int = (k: string, d: number) => (values.get(k) as number | undefined) ?? d
  const bool = (k: string) => (values.get(k) as boolean | undefined) ?? false

  const baseUrl = str('base-url') ? validUrl(str('base-url')!, '--base-url', ['http:', 'https:']) : ''
  const streamUrl = str('stream-url')
    ? validUrl(str('stream-url')!, '--stream-url', ['ws:', 'wss:', 'http:', 'https:'])
    : ''
  const fileProfile = (file.profile ?? {}) as Partial<ProfileHints>
  const fileTools = (fileProfile.tools ?? {}) as Partial<ProfileHints['tools']>
  const profile: ProfileHints = {
    ...DEFAULT_PROFILE,
    ...fileProfile,
    tools: { ...DEFAULT_PROFILE.tools, ...fileTools },
  }
  const seed = (values.get('seed') as number | undefined) ?? randomBytes(4).readUInt32BE(0) % 2 ** 31
  const tokens: SuiteConfig['tokens'] = { primary: str('token') ?? '' }
  for (const [flag, key] of [
    ['second-token', 'secondWorkspace'],
    ['narrow-token', 'narrowScope'],
    ['other-scope-token', 'otherScope'],
    ['runs-only-token', 'runsOnly'],
    ['limited-token', 'rateLimited'],
    ['limited-peer-token', 'rateLimitedPeer'],
    ['expired-token', 'expired'],
    ['revoked-token', 'revoked'],
    ['revocable-token', 'revocable'],
    ['quota-limited-token', 'quotaLimited'],
    ['standard-tier-token', 'standardTier'],
    ['pro-tier-token', 'proTier'],
  ] as const) {
    const v = str(flag)
    if (v) tokens[key] = v
  }
  const receiverUrl = str('receiver-url')
  const graphqlUrl = str('graphql-url')
  const provision = str('provision')
  const revoke = str('revoke')
  const issueExpiring = str('issue-expiring')
  const natsUrl = str('nats-url')
  if (natsUrl) natsTarget(natsUrl, settingName('nats-url'))
  const config: SuiteConfig = {
    ...declarations(file),
    ...(provision ? { provision } : {}),
    ...(revoke ? { revoke } : {}),
    ...(issueExpiring ? { issueExpiring } : {}),
    ...(natsUrl ? { natsUrl } : {}),
    ...(graphqlUrl ? { graphqlUrl: validUrl(graphqlUrl, '--graphql-url', ['http:', 'https:']) } : {}),
    baseUrl,
    streamUrl,
    openapiPath: str('openapi') ?? defaultContract(),
    tokens,
    rateLimitSearch: int('rate-limit-search', 60),
    maxRetryAfterWait: int('max-retry-after', 20),
    paceMaxWait: int('pace-max-wait', 120),
    receiver: {
      host: str('receiver-host') ?? '127.0.0.1',
      port: int('receiver-port', 0),
      ...(receiverUrl ? { url: validUrl(receiverUrl, '--receiver-url', ['http:', 'https:']) } : {}),
    },
    profile,
    budget: int('budget', 2500),
    timeoutMs: int('timeout-ms', 10_000),
    waitMs: int('wait-ms', 15_000),
    seed,
    fuzzRuns: int('fuzz-runs', 12),
    strictProfile: bool('strict-profile'),
    allowIncomplete: bool('allow-incomplete'),
    bail: bool('bail'),
    first: (values.get('first') as string[] | undefined) ?? [],
    only: (values.get('only') as string[] | undefined) ?? [],
    skip: (values.get('skip') as string[] | undefined) ?? [],
    prefix: `conf-${randomBytes(4).toString('hex')}-`,
    reports: {
      ...(str('junit') ? { junit: str('junit') } : {}),
      ...(str('json') ? { json: str('json') } : {}),
      ...(str('markdown') ? { markdown: str('markdown') } : {}),
    },
    verbose: bool('verbose'),
  }
  if (config.budget < 50) throw new ConfigError('--budget must be at least 50 requests')
  if (config.timeoutMs < 100) throw new ConfigError('--timeout-ms must be at least 100')
  const deadline = int('deadline', 0)
  if (deadline > 0) config.deadlineSeconds = deadline
  const referencePort = int('reference-port', 0)
  if (referencePort > 65535) throw new ConfigError('--reference-port must be 0..65535')
  if (referencePort > 0) config.referencePort = referencePort
  return {
    config,
    reference: bool('reference'),
    list: bool('list'),
    help: bool('help'),
    plan: bool('plan'),
    version: bool('version'),
  }
}

/** Fails with a clear message when the deployment to test is not named. */
export function requireTarget(config: SuiteConfig): void {
  if (!config.baseUrl) {
    throw new ConfigError(
      'no deployment to test: give --base-url URL (or AGENTOPS_CONFORMANCE_BASE_URL), or --reference',
    )
  }
  if (!config.tokens.primary) {
    throw new ConfigError(
      "no primary token: give --provision COMMAND (the deployment's provisioning command), --token, AGENTOPS_CONFORMANCE_TOKEN or tokens.primary in --config",
    )
  }
  if (!config.streamUrl) config.streamUrl = config.baseUrl.replace(/^http/, 'ws')
  config.streamUrl = config.streamUrl.replace(/^http/, 'ws')
}
