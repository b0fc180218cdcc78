import { setFlagsFromString } from 'node:v8'

/**
 * The Node options the server's process is started with: `npm start`, `npm run cluster`'s replicas and every
 * bench's servers pass them before the script; `agentops serve` started without one says so once (see
 * `missingNodeOptions`), since V8 reads them only as the process starts.
 *
 * `--max-semi-space-size=64`: V8's young generation at 64 MiB semi-spaces instead of Node 20's 16 MiB. Every request
 * allocates (most of it Node's and Hono's per-request objects), so with small semi-spaces a loaded server scavenges
 * many times a second, each scavenge copying what the requests in flight hold and promoting part of it; the old
 * generation then fills and mark-compact pauses follow, each one delaying every request in flight. The larger young
 * generation trades some resident memory for that CPU (`npm run bench:observability -- --route post-keyed
 * [--postgres] --b-env NODE_OPTIONS=--max-semi-space-size=64`; figures in docs/performance.md).
 */
export const SERVER_NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=64']

/**
 * V8 flags `agentops serve` sets on its own VM as it starts (`v8.setFlagsFromString`), before it loads the server:
 * Node refuses them in NODE_OPTIONS, so an operator would have to edit every command line that starts a replica, and
 * a flag a later V8 drops is ignored there where on `node`'s command line it would stop the process from starting.
 *
 * `--no-allocation-site-pretenuring`: V8 watches how many objects of each allocation site survive a scavenge and,
 * when nearly all do, allocates that site's objects straight in the old generation. Under a PostgreSQL store's write
 * load the old generation then fills with per-request objects: scavenges promote far more and take longer, and
 * mark-compacts follow, each of which every request in flight waits for. With the flag those objects die young;
 * on SQLite the promotion is small either way (`--trace-gc-nvp` and bench:http's keyed POST p99 on PostgreSQL;
 * figures in docs/performance.md).
 */
export const SERVER_V8_FLAGS: readonly string[] = ['--no-allocation-site-pretenuring']

/**
 * `--max_semi_space_size=64` and `--max-semi-space-size 64` name the same V8 option as `--max-semi-space-size=64`,
 * and `--allocation-site-pretenuring` the same as `--no-allocation-site-pretenuring` (the other value).
 */
function optionName(arg: string): string | undefined {
  if (!arg.startsWith('--')) return undefined
  const at = arg.indexOf('=')
  const name = (at < 0 ? arg : arg.slice(0, at)).replaceAll('_', '-')
  return name.startsWith('--no-') ? `--${name.slice(5)}` : name
}

/** The options of `wanted` that `node` was not given, with any value, on its command line or in NODE_OPTIONS. */
function notGiven(wanted: readonly string[], execArgv: readonly string[], nodeOptions: string): string[] {
  const given = new Set(
    [...execArgv, ...nodeOptions.split(/\s+/)].map(optionName).filter((n): n is string => n !== undefined),
  )
  return wanted.filter((o) => !given.has(optionName(o) ?? o))
}

/**
 * The options of SERVER_NODE_OPTIONS this process was started without, on its command line or in NODE_OPTIONS. An
 * option given with another value is an operator's choice and counts as given.
 */
export function missingNodeOptions(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): string[] {
  return notGiven(SERVER_NODE_OPTIONS, execArgv, nodeOptions)
}

/** The flags of SERVER_V8_FLAGS to set: all but those the operator gave `node`, with either value. */
export function serverV8Flags(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): string[] {
  return notGiven(SERVER_V8_FLAGS, execArgv, nodeOptions)
}

/** Sets serverV8Flags() on this process's VM and returns them (`agentops serve`, before the server loads). */
export function applyServerV8Flags(): string[] {
  const flags = serverV8Flags()
  for (const flag of flags) setFlagsFromString(flag)
  return flags
}
