/**
 * The Node options the server's process is started with: `npm start`, `npm run cluster`'s replicas and every
 * bench's servers pass them before the script; `agentops serve` started without one says so once (see
 * `missingNodeOptions`), since V8 reads them only as the process starts.
 *
 * `--max-semi-space-size=64`: V8's young generation at 64 MiB semi-spaces instead of Node 20's 16 MiB. Every request
 * allocates (a keyed POST about 80 kB, most of it Node's and Hono's per-request objects), so at 16 MiB a loaded
 * server scavenged about 30 times a second, each scavenge copying what the requests in flight held and promoting
 * part of it; the old generation then filled and mark-compact pauses of 10-20 ms followed every second or two, each
 * one delaying every request in flight. Paired (`npm run bench:observability -- --route post-keyed [--postgres]
 * --b-env NODE_OPTIONS=--max-semi-space-size=64`, 10 rounds): a keyed POST costs 16.5 % (SQLite) and 20.1 %
 * (PostgreSQL) more CPU without it; a cached GET 1.4 %. The server's resident memory under that load grew by about
 * 40-50 MB, to about 270 MB (README, Performance).
 */
export const SERVER_NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=64']

/** `--max_semi_space_size=64` and `--max-semi-space-size 64` name the same V8 option as `--max-semi-space-size=64`. */
function optionName(arg: string): string | undefined {
  if (!arg.startsWith('--')) return undefined
  const at = arg.indexOf('=')
  return (at < 0 ? arg : arg.slice(0, at)).replaceAll('_', '-')
}

/**
 * The options of SERVER_NODE_OPTIONS this process was started without, on its command line or in NODE_OPTIONS. An
 * option given with another value is an operator's choice and counts as given.
 */
export function missingNodeOptions(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): string[] {
  const given = new Set(
    [...execArgv, ...nodeOptions.split(/\s+/)].map(optionName).filter((n): n is string => n !== undefined),
  )
  return SERVER_NODE_OPTIONS.filter((o) => !given.has(optionName(o) ?? o))
}
