import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.js'
import { systemClock } from '../domain/clock.js'
import type { Tier } from '../domain/identity.js'
import { KeyAdministration, keyIdOfToken } from '../domain/keys/administration.js'
import {
  type IssuedKey,
  type IssueKeyInput,
  KeyService,
  type WorkspaceSettings,
} from '../domain/keys/service.js'
import { HOURLY_WINDOW_SECONDS } from '../domain/limits/rate-limit.js'
import { quotaLimit } from '../domain/quotas/quota.js'
import { isQuotaName, QUOTA_NAMES, type QuotaOverrides } from '../domain/quotas/types.js'
import type { Logger } from '../observability/logger.js'
import { PACKAGE_ROOT } from '../package-root.js'
import { migrate } from '../store/migrations/index.js'
import { openDb } from '../store/open.js'
import { createRepositories } from '../store/repos/index.js'
import { applyServerV8Flags, missingNodeOptions } from './node-options.js'
import { provisionConformance } from './provision-conformance.js'
import { startFailureSentence } from './start-failure.js'

class UsageError extends Error {}

const HELP: Record<string, string> = {
  main: `agentops: the Agent Operations reference server and its operator tools

Usage:
  agentops serve [--port N] [--host H] [--database-url URL]   serve HTTP and the WebSocket stream on one port
  agentops keys create --workspace NAME [options]             issue an API key (creates the workspace on first use)
  agentops keys list --workspace NAME                         list a workspace's keys (never their secrets)
  agentops keys revoke KEY_ID | --token-stdin                 revoke a key (by its id, or a token read on stdin)
  agentops keys provision-conformance                         issue the conformance suite's identities (JSON)
  agentops workspaces set NAME [options]                      change a workspace's tier, limits, classes, flags
  agentops --version                                          print the version

Every command takes --database-url URL (default: $AGENTOPS_DATABASE_URL or sqlite:./.agentops/agentops.db)
and --help.`,
  serve: `agentops serve [--port N] [--host H] [--database-url URL]

Serves the API and the WebSocket stream (/v1/stream) on one port.
  --port N            port (default: $PORT or 8080)
  --host H            address to bind (default: $HOST or 0.0.0.0)
  --database-url URL  sqlite:PATH (default sqlite:./.agentops/agentops.db) or postgres://...
Other settings: AGENTOPS_MAX_BODY_BYTES, AGENTOPS_WEBHOOK_PRIVATE_TARGETS=HOST:PORT,..., AGENTOPS_RUN_CONCURRENCY.`,
  'keys create': `agentops keys create (--workspace NAME | --token-stdin) [options]

Issues an API key; the token is printed once and only its hash is stored.
  --workspace NAME       workspace to issue the key in (created on first use)
  --token-stdin          issue it like the key of the token read on standard input: in its workspace, as its
                         identity, with its scopes unless --scopes or --identity say otherwise; the conformance
                         suite's short-lived key: --issue-expiring "agentops keys create --token-stdin
                         --expires-in 5 --json --database-url URL"
  --tier T               standard (1000/h) | pro (10000/h) | enterprise (custom)
  --limit-per-hour N     hourly quota, an enterprise workspace's own (a new workspace without --tier is
                         enterprise; standard and pro keep §8's 1,000 and 10,000 and refuse it)
  --burst-limit N        quota of the burst window
  --burst-window-seconds N
                         the burst window's length, 1..3600 seconds (default: 10; kept when the tier changes)
  --scopes a,b           comma-separated scopes (default: * = everything)
  --identity NAME        identity the key acts as (default: default)
  --expires-in SECONDS   expiry from now (default: never)
  --revoked              revoke the key as soon as it is issued: a token whose refusal can be shown (the
                         conformance suite's revoked identity)
  --policy-classes a,b   ingest policy classes the workspace accepts
  --json                 print JSON: {token, key_id, workspace_id, scopes, expires_at, ...}
  --database-url URL     store to write to`,
  keys: `agentops keys <create|list|revoke> ...

Issues, lists and revokes API keys.
  agentops keys create --workspace NAME [options]   issue a key (creates the workspace on first use)
  agentops keys list --workspace NAME               list a workspace's keys (never their secrets)
  agentops keys revoke KEY_ID | --token-stdin       revoke a key (by its id, or a token read on stdin)
  agentops keys provision-conformance               issue every identity the conformance suite needs
Run agentops keys <command> --help for that command's options.`,
  'keys provision-conformance': `agentops keys provision-conformance [--workspace-prefix P] [--primary-tier T]
                                    [--database-url URL]

Issues every identity the conformance suite (agentops-conformance) asks for, in new workspaces named
P-primary, P-second, P-limited, P-quota, P-standard and P-pro (default P: conformance-<random>; the last two on the
standard and pro tiers' own limits), and prints them as one line of JSON, the suite's provisioning contract:
{"tokens": {"primary", "expired", "secondWorkspace", "narrowScope", "otherScope", "rateLimited", "rateLimitedPeer",
"runsOnly", "revoked", "revocable", "quotaLimited", "standardTier", "proTier"}}. Give the command to the suite as --provision "agentops keys
provision-conformance --database-url URL" (or "provision" in its config file); the server it tests must run with
AGENTOPS_WEBHOOK_PRIVATE_TARGETS=HOST:PORT (the receiver's exact address) when the suite's webhook receiver is on a
private address. --primary-tier puts the primary identity on tier T's rate limit (standard, pro or enterprise)
instead of limits no run reaches: the suite then paces itself on the rate-limit headers.`,
  workspaces: `agentops workspaces set NAME [options]

Changes a workspace's tier, limits, policy classes and feature flags.
Run agentops workspaces set --help for the options.`,
  'keys list': `agentops keys list --workspace NAME [--json] [--database-url URL]`,
  'keys revoke': `agentops keys revoke (KEY_ID | --token-stdin) [--json] [--database-url URL]

Revokes a key: every request with its token is refused 401 from then on, and the stream and graphql-ws connections
it holds open are closed (4401), on every replica.
  --token-stdin       the key is the one of the token read on standard input (a token stays out of the process
                      list); the conformance suite's revoke command: --revoke "agentops keys revoke --token-stdin
                      --database-url URL"`,
  'workspaces set': `agentops workspaces set NAME [--tier T] [--limit-per-hour N] [--burst-limit N]
                        [--burst-window-seconds N] [--policy-classes a,b] [--features a,b]
                        [--quota NAME=N,...] [--json] [--database-url URL]

Changes a workspace (created if absent). Feature flags (spec §9) are set here.
  --burst-window-seconds N
                       the burst window's length, 1..3600 seconds (default: 10; kept unless given)
  --quota NAME=N,...   the workspace's own quotas over its tier's (several: comma-separated); NAME is one of
                       ${QUOTA_NAMES.join(', ')}
The answer lists every quota the workspace has then.`,
}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new UsageError(`${flag} must be a positive integer, got "${value}"`)
  return n
}

/** The burst window's length: a positive integer of seconds, at most the hourly window's. */
function burstWindowSeconds(value: string | undefined): number | undefined {
  const n = positiveInt(value, '--burst-window-seconds')
  if (n !== undefined && n > HOURLY_WINDOW_SECONDS)
    throw new UsageError(
      `--burst-window-seconds must be at most ${HOURLY_WINDOW_SECONDS} (the hourly window), got "${value}"`,
    )
  return n
}

function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
}

/**
 * `--scopes a,b`. Given, it must name a scope: an empty list (`--scopes ""`, a script's empty variable) would
 * otherwise read as no choice at all, and a key with every scope (or the token's) would be issued instead.
 */
function scopeList(value: string | undefined): string[] | undefined {
  const scopes = list(value)
  if (scopes?.length === 0)
    throw new UsageError(
      '--scopes lists no scope: name at least one, or leave --scopes out for every scope (*)',
    )
  return scopes
}

/** `--quota agents=500,idempotency_bytes=1048576`: each a quota's name and a non-negative integer. */
function quotas(value: string | undefined): QuotaOverrides | undefined {
  const pairs = list(value)
  if (pairs === undefined) return undefined
  const set: QuotaOverrides = {}
  for (const pair of pairs) {
    const [name, amount, ...more] = pair.split('=')
    if (name === undefined || !isQuotaName(name) || amount === undefined || more.length > 0)
      throw new UsageError(`--quota takes NAME=N pairs, NAME one of ${QUOTA_NAMES.join(', ')}; got "${pair}"`)
    const n = Number(amount)
    if (!Number.isSafeInteger(n) || n < 0)
      throw new UsageError(`--quota ${name} must be a non-negative integer, got "${amount}"`)
    set[name] = n
  }
  return set
}

function tier(value: string | undefined, flag = '--tier'): Tier | undefined {
  if (value === undefined) return undefined
  if (value !== 'standard' && value !== 'pro' && value !== 'enterprise') {
    throw new UsageError(`${flag} must be standard, pro or enterprise, got "${value}"`)
  }
  return value
}

/**
 * The token on standard input (`--token-stdin`: a token stays out of the process list) and its key's id; a usage error
 * when it holds no token of this server.
 */
async function tokenFromStdin(): Promise<{ token: string; keyId: string }> {
  let text = ''
  process.stdin.setEncoding('utf8')
  for await (const chunk of process.stdin) text += String(chunk)
  const token = text.trim()
  const keyId = keyIdOfToken(token)
  if (!keyId) throw new UsageError('standard input holds no token of this server (aok_...)')
  return { token, keyId }
}

/**
 * Issues another key like `token`'s: in its workspace, acting as its identity with its scopes unless given (`keys
 * create --token-stdin`, the conformance suite's way to a key that expires while it holds connections open).
 * Undefined when the token is no valid key of this store.
 */
async function issueLike(
  keys: KeyService,
  admin: KeyAdministration,
  token: string,
  input: Pick<IssueKeyInput, 'identity' | 'scopes' | 'expiresInSeconds'>,
): Promise<IssuedKey | undefined> {
  const like = await keys.verifyRequest({ authorization: `Bearer ${token}` })
  if (typeof like === 'string') return undefined
  return admin.issue({
    workspace: like.workspace.name,
    identity: input.identity ?? like.identity,
    // No scopes given keeps the token’s: never the wildcard `keys create` defaults to (an empty --scopes is refused).
    scopes: input.scopes ?? like.scopes,
    expiresInSeconds: input.expiresInSeconds,
  })
}

const COMMON = {
  help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean' },
  'database-url': { type: 'string' },
} as const

async function withKeys<T>(
  databaseUrl: string | undefined,
  fn: (keys: KeyService, admin: KeyAdministration) => Promise<T>,
): Promise<T> {
  const config = loadConfig(process.env, databaseUrl ? { databaseUrl } : {})
  const db = await openDb(config.databaseUrl, {
    operator: true,
    onOperatorWait: (totalMs) =>
      console.error(
        `agentops: the database is busy (another process holds its write lock); waiting for it, up to ${totalMs / 1000} s`,
      ),
  })
  try {
    await migrate(db)
    const repos = createRepositories(db)
    // The change feed announces a revoke to running servers on PostgreSQL. On SQLite they read it on their poll, and
    // the feed (with the PostgreSQL driver it imports) is not loaded: a command's start is most of its time.
    const changes =
      db.dialect === 'postgres' ? (await import('../store/notifications.js')).openChangeFeed(db) : undefined
    const keys = new KeyService(repos.keys, repos.workspaces, systemClock, {}, changes, config.keyWatchPollMs)
    return await fn(
      keys,
      new KeyAdministration(repos.keys, repos.workspaces, systemClock, changes, keys.cache, keys.watch),
    )
  } finally {
    await db.close()
  }
}

function settingsFrom(values: Record<string, string | boolean | undefined>): WorkspaceSettings {
  const s = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined)
  return {
    tier: tier(s('tier')),
    limitPerHour: positiveInt(s('limit-per-hour'), '--limit-per-hour'),
    burstLimit: positiveInt(s('burst-limit'), '--burst-limit'),
    burstWindowSeconds: burstWindowSeconds(s('burst-window-seconds')),
    policyClasses: list(s('policy-classes')),
    features: list(s('features')),
    quotas: quotas(s('quota')),
  }
}

const WORKSPACE_FLAGS = {
  tier: { type: 'string' },
  'limit-per-hour': { type: 'string' },
  'burst-limit': { type: 'string' },
  'burst-window-seconds': { type: 'string' },
  'policy-classes': { type: 'string' },
  features: { type: 'string' },
  quota: { type: 'string' },
} as const

const HELP_FLAGS = new Set(['--help', '-h', 'help'])

export async function main(argv: string[]): Promise<number> {
  const [group, sub] = argv
  // `agentops keys --help` (or a group without its command) explains the group rather than failing.
  if ((group === 'keys' || group === 'workspaces') && (sub === undefined || HELP_FLAGS.has(sub))) {
    console.log(HELP[group])
    return sub === undefined ? 2 : 0
  }
  if (group === '--version' || group === '-v' || group === 'version') {
    console.log(`agentops ${version()}`)
    return 0
  }
  const command = group === 'keys' || group === 'workspaces' ? `${group} ${sub ?? ''}`.trim() : (group ?? '')
  const rest = argv.slice(group === 'keys' || group === 'workspaces' ? 2 : 1)
  try {
    switch (command) {
      case '':
      case '--help':
      case '-h':
      case 'help':
        console.log(HELP.main)
        return command === '' ? 2 : 0
      case 'serve': {
        const { values } = parseArgs({
          args: rest,
          options: { ...COMMON, port: { type: 'string' }, host: { type: 'string' } },
          strict: true,
        })
        if (values.help) return help('serve')
        const port = values.port !== undefined ? Number(values.port) : undefined
        if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535))
          throw new UsageError(`--port must be 0..65535, got "${values.port}"`)
        const overrides = {
          ...(port !== undefined ? { port } : {}),
          ...(values.host ? { host: values.host } : {}),
          ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
        }
        // The server's own log from the first line on: stdout stays one JSON object a line (pretty on a terminal).
        const config = loadConfig(process.env, overrides)
        const { createLogger } = await import('../observability/logger.js')
        const logger = createLogger({ level: config.logLevel, pretty: config.logPretty })
        logCrashes(logger)
        const v8Flags = applyServerV8Flags()
        logger.info({ node: process.version, v8_flags: v8Flags }, 'starting')
        const missing = missingNodeOptions()
        if (missing.length > 0) {
          logger.warn(
            { missing_node_options: missing },
            `Node was started without ${missing.join(' ')}, which \`npm start\` passes: under load a write costs ` +
              `about a sixth more CPU; start it as \`node ${missing.join(' ')} bin/agentops.mjs serve\` or put the option in NODE_OPTIONS`,
          )
        }
        // Only `serve` loads the server (HTTP, GraphQL, the generated routes): key and workspace commands start fast.
        const { startServer } = await import('../server.js')
        let server: Awaited<ReturnType<typeof startServer>>
        try {
          server = await startServer({ config: overrides, logger })
        } catch (err) {
          logger.fatal({ err }, 'start failed')
          logger.flush()
          // Besides the log line: one plain sentence for the person who ran the command.
          process.stderr.write(`${startFailureSentence(err, config)}\n`)
          return 1
        }
        let stopping = false
        const stop = (signal: NodeJS.Signals) => {
          if (stopping) {
            // A second signal means "now": skip the grace period.
            logger.warn({ signal }, 'second signal: exiting without waiting')
            logger.flush()
            process.exit(1)
          }
          stopping = true
          const began = Date.now()
          server.close().then(
            () => {
              logger.info({ signal, ms: Date.now() - began }, 'stopped')
              logger.flush()
              process.exit(0)
            },
            (err: unknown) => {
              logger.error({ err, signal }, 'shutdown failed')
              logger.flush()
              process.exit(1)
            },
          )
        }
        process.on('SIGINT', stop)
        process.on('SIGTERM', stop)
        return await new Promise<number>(() => {})
      }
      case 'keys create': {
        const { values } = parseArgs({
          args: rest,
          options: {
            ...COMMON,
            ...WORKSPACE_FLAGS,
            workspace: { type: 'string' },
            scopes: { type: 'string' },
            identity: { type: 'string' },
            'expires-in': { type: 'string' },
            revoked: { type: 'boolean' },
            'token-stdin': { type: 'boolean' },
          },
          strict: true,
        })
        if (values.help) return help('keys create')
        const like = values['token-stdin'] === true
        if (like && values.workspace) throw new UsageError('give --workspace NAME or --token-stdin, not both')
        if (!like && !values.workspace)
          throw new UsageError('--workspace NAME (or --token-stdin) is required')
        const expiresIn = positiveInt(values['expires-in'], '--expires-in')
        // Every flag is checked before the store is opened, so a typo never creates a database.
        const settings = settingsFrom(values)
        if (like && Object.values(settings).some((v) => v !== undefined))
          throw new UsageError(
            '--token-stdin issues into the token’s workspace as it is: give no workspace settings',
          )
        const token = like ? (await tokenFromStdin()).token : undefined
        const input = {
          scopes: scopeList(values.scopes),
          identity: values.identity,
          expiresInSeconds: expiresIn,
        }
        const issued = await withKeys(values['database-url'], async (keys, admin) => {
          const key =
            token !== undefined
              ? await issueLike(keys, admin, token, input)
              : await admin.issue({ workspace: values.workspace!, ...settings, ...input })
          if (key && values.revoked) await admin.revoke(key.key_id)
          return key
        })
        if (!issued) {
          console.error(
            'the token read on standard input is no valid key of this store (unknown, revoked or expired)',
          )
          return 1
        }
        if (values.json) console.log(JSON.stringify(issued))
        else
          console.log(
            `token:        ${issued.token}\nkey_id:       ${issued.key_id}\nworkspace_id: ${issued.workspace_id}\nscopes:       ${issued.scopes.join(',')}\nexpires_at:   ${issued.expires_at ?? 'never'}\n${values.revoked ? 'revoked:      yes (every request with it is refused)\n' : ''}(the token is shown once; only its hash is stored)`,
          )
        return 0
      }
      case 'keys provision-conformance': {
        const { values } = parseArgs({
          args: rest,
          options: { ...COMMON, 'workspace-prefix': { type: 'string' }, 'primary-tier': { type: 'string' } },
          strict: true,
        })
        if (values.help) return help('keys provision-conformance')
        const prefix = values['workspace-prefix']
        if (prefix !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,60}$/.test(prefix))
          throw new UsageError(`--workspace-prefix must be letters, digits, . _ or -, got "${prefix}"`)
        const primaryTier = tier(values['primary-tier'], '--primary-tier')
        const provisioned = await withKeys(values['database-url'], (_, admin) =>
          provisionConformance(admin, prefix, primaryTier),
        )
        console.log(JSON.stringify(provisioned))
        return 0
      }
      case 'keys list': {
        const { values } = parseArgs({ args: rest, options: { ...COMMON, workspace: { type: 'string' } } })
        if (values.help) return help('keys list')
        if (!values.workspace) throw new UsageError('--workspace NAME is required')
        const keys = await withKeys(values['database-url'], (_, admin) => admin.list(values.workspace!))
        console.log(
          values.json
            ? JSON.stringify(keys)
            : keys.map((k) => `${k.key_id}  ${k.scopes.join(',')}`).join('\n'),
        )
        return 0
      }
      case 'keys revoke': {
        const { values, positionals } = parseArgs({
          args: rest,
          options: { ...COMMON, 'token-stdin': { type: 'boolean' } },
          allowPositionals: true,
        })
        if (values.help) return help('keys revoke')
        if (values['token-stdin'] && positionals.length > 0)
          throw new UsageError('give KEY_ID or --token-stdin, not both')
        const keyId = values['token-stdin'] ? (await tokenFromStdin()).keyId : positionals[0]
        if (!keyId) throw new UsageError('KEY_ID is required')
        const revoked = await withKeys(values['database-url'], (_, admin) => admin.revoke(keyId))
        if (!revoked) {
          console.error(`no active key ${keyId}`)
          return 1
        }
        console.log(values.json ? JSON.stringify({ key_id: keyId, revoked: true }) : `revoked ${keyId}`)
        return 0
      }
      case 'workspaces set': {
        const { values, positionals } = parseArgs({
          args: rest,
          options: { ...COMMON, ...WORKSPACE_FLAGS },
          allowPositionals: true,
        })
        if (values.help) return help('workspaces set')
        const name = positionals[0]
        if (!name) throw new UsageError('NAME is required')
        const settings = settingsFrom(values)
        const ws = await withKeys(values['database-url'], (_, admin) =>
          admin.configureWorkspace(name, settings),
        )
        console.log(
          JSON.stringify({
            workspace_id: ws.id,
            name: ws.name,
            tier: ws.tier,
            limit_per_hour: ws.limitPerHour,
            burst_limit: ws.burstLimit,
            burst_window_seconds: ws.burstWindowSeconds,
            policy_classes: ws.policyClasses,
            features: ws.features,
            quotas: Object.fromEntries(QUOTA_NAMES.map((q) => [q, quotaLimit(ws, q)])),
          }),
        )
        return 0
      }
      default:
        throw new UsageError(`unknown command "${argv.slice(0, 2).join(' ')}"; see agentops --help`)
    }
  } catch (err) {
    if (err instanceof UsageError || (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`agentops: ${(err as Error).message}`)
      return 2
    }
    console.error(`agentops: ${(err as Error).message}`)
    return 1
  }
}

/**
 * A crash of the serving process is logged like everything else it says (with its stack, at `fatal`, flushed) and
 * ends it with 1, as Node would end it.
 */
function logCrashes(logger: Pick<Logger, 'fatal' | 'flush'>): void {
  const crash = (what: string) => (err: unknown) => {
    logger.fatal({ err }, what)
    logger.flush()
    process.exit(1)
  }
  process.on('uncaughtException', crash('uncaught exception'))
  process.on('unhandledRejection', crash('unhandled rejection'))
}

/** The kit's version, from its package.json. */
function version(): string {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: string }
  return pkg.version ?? 'unknown'
}

function help(command: string): number {
  console.log(HELP[command])
  return 0
}
