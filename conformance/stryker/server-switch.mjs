/**
 * Preloaded (`node --import`) into the reference server that switch-runner.mjs keeps running for a Stryker worker:
 * a control channel (the IPC channel of the process that started it) through which the runner switches Stryker's
 * active mutant inside the running server and issues keys into its store, without a new process per mutant.
 *
 * StrykerJS's instrumented code asks `globalThis.__stryker__.activeMutant` at every mutated expression, and
 * records which mutants ran: while `currentTestId` is unset (loading the modules, starting the server) as static
 * coverage, afterwards under that test id. The runner sets the test id once the server answers, so a mutant only
 * executed at start-up shows up as static and Stryker gives it a fresh process (`reloadEnvironment`); a server
 * started for a static mutant gets it from `__STRYKER_ACTIVE_MUTANT__`, read by the instrumented preamble at load.
 *
 * Messages (each answered with `{ reply: id, ... }`):
 * - `{ cmd: 'track', testId }`: mutants hit from now on are recorded under `testId`
 * - `{ cmd: 'activate', mutant, hitLimit }`: makes `mutant` (or none) active, counting its hits against `hitLimit`
 * - `{ cmd: 'keys', requests }`: `agentops keys create ... --json` for each request against this server's store,
 *   in this process (the kit's own CLI entry, the same code the suite's `--reference` runs in a child process)
 * - `{ cmd: 'end' }`: deactivates the mutant and answers its hit count, the coverage recorded so far and the CPU
 *   time this process has used (microseconds, user + system)
 * The server exits when the runner's process goes away (the channel disconnects).
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const ns = globalThis.__stryker__ ?? {}
globalThis.__stryker__ = ns
const databaseUrl = process.env.AGENTOPS_STRYKER_DATABASE_URL ?? ''

/** `agentops keys create` for each request, in order, their tokens read from the command's JSON line. */
async function issue(requests) {
  const { main } = await import(pathToFileURL(join(process.cwd(), 'dist', 'src', 'cli', 'main.js')).href)
  const tokens = []
  const log = console.log
  for (const args of requests) {
    const printed = []
    console.log = (...parts) => printed.push(parts.join(' '))
    let code
    try {
      code = await main(['keys', 'create', ...args, '--json', '--database-url', databaseUrl])
    } finally {
      console.log = log
    }
    const line = printed.findLast((l) => l.trim().startsWith('{'))
    const token = line ? JSON.parse(line).token : undefined
    if (code !== 0 || !token)
      throw new Error(`agentops keys create ${args.join(' ')} exited ${code}: ${printed.join('\n')}`)
    tokens.push(token)
  }
  return tokens
}

const commands = {
  track: ({ testId }) => {
    ns.currentTestId = testId
    return {}
  },
  activate: ({ mutant, hitLimit }) => {
    ns.activeMutant = mutant
    ns.hitLimit = hitLimit
    ns.hitCount = hitLimit === undefined ? undefined : 0
    return {}
  },
  keys: async ({ requests }) => ({ tokens: await issue(requests) }),
  end: () => {
    const { user, system } = process.cpuUsage()
    const answer = { hitCount: ns.hitCount, coverage: ns.mutantCoverage, cpuMicros: user + system }
    ns.activeMutant = undefined
    ns.hitCount = undefined
    ns.hitLimit = undefined
    return answer
  },
}

if (process.send) {
  process.on('message', async (message) => {
    const command = commands[message?.cmd]
    try {
      if (!command) throw new Error(`unknown command ${message?.cmd}`)
      process.send({ reply: message.id, ...(await command(message)) })
    } catch (err) {
      process.send({ reply: message.id, error: String(err?.stack ?? err) })
    }
  })
  // The channel alone keeps no server alive (one that failed to start exits as it would), and a server never
  // outlives its runner: a worker Stryker killed (a timeout) takes its server with it.
  process.channel?.unref()
  process.on('disconnect', () => process.exit(0))
}
