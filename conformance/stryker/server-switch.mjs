/**
 * Preloaded (`node --import`) into the reference server that switch-runner.mjs keeps running for a Stryker worker:
 * a control channel (the IPC channel of the process that started it) through which the runner switches Stryker's
 * active mutant inside the running server and provisions identities in its store, without a new process per mutant.
 *
 * StrykerJS's instrumented code asks `globalThis.__stryker__.activeMutant` at every mutated expression, and
 * records which mutants ran: while `currentTestId` is unset (loading the modules, starting the server) as static
 * coverage, afterwards under that test id. The runner sets the test id once the server answers, so a mutant only
 * executed at start-up shows up as static and Stryker gives it a fresh process (`reloadEnvironment`); a server
 * started for a static mutant gets it from `__STRYKER_ACTIVE_MUTANT__`, read by the instrumented preamble at load.
 *
 * Messages (each answered with `{ reply: id, ... }`):
 * - `{ cmd: 'track', testId }`: mutants hit from now on are recorded under `testId`
 * - `{ cmd: 'activate', mutant, hitLimit }`: makes `mutant` (or none) active, counting its hits against `hitLimit`;
 *   while a mutant is active no coverage is counted (coverage.mjs: a mutant run needs only its hits)
 * - `{ cmd: 'provision', args }`: the CLI command `agentops <args>` (`keys provision-conformance ...`) against this
 *   server's store, answered with what it printed, in a worker thread of this process (the kit's own CLI entry, the
 *   same code the suite's `--reference` runs in a child process), with the active mutant; its coverage and hits are
 *   added to this thread's
 * - `{ cmd: 'end' }`: deactivates the mutant and answers its hit count, the coverage recorded so far and the CPU
 *   time this process has used (microseconds, user + system)
 * The server exits when the runner's process goes away (the channel disconnects).
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { addCoverage } from './coverage.mjs'

const ns = globalThis.__stryker__ ?? {}
globalThis.__stryker__ = ns
const databaseUrl = process.env.AGENTOPS_STRYKER_DATABASE_URL ?? ''

/**
 * One CLI command (`agentops keys provision-conformance ...`), its printed lines answered, run in a worker thread of
 * this process (instrumented code, with the active mutant and test id passed over).
 *
 * Not on the server's own thread: the command is an operator of the store (src/store/sqlite/operators.ts), whose
 * BEGIN IMMEDIATE waits synchronously for the write lock while the server's connection is asked to make room. On
 * the server's thread that wait blocked the very loop that would COMMIT the server's open batch (one opened by a
 * timer, say the outbox's, in the same turn): the run hung until a deadline killed it, whatever the mutant.
 */
const ISSUER = `
const { parentPort, workerData } = require('node:worker_threads')
const ns = globalThis.__stryker__ || (globalThis.__stryker__ = {})
let loaded
parentPort.on('message', async ({ id, args, databaseUrl, mutant, coverageOff, hitLimit, testId }) => {
  ns.currentTestId = testId
  ns.activeMutant = mutant
  ns.coverageOff = coverageOff
  ns.hitLimit = hitLimit
  ns.hitCount = hitLimit === undefined ? undefined : 0
  const log = console.log
  try {
    loaded ??= import(workerData.cli)
    const { main } = await loaded
    const printed = []
    console.log = (...parts) => printed.push(parts.join(' '))
    let code
    try {
      code = await main([...args, '--database-url', databaseUrl])
    } finally {
      console.log = log
    }
    if (code !== 0) throw new Error('agentops ' + args.join(' ') + ' exited ' + code + ': ' + printed.join('\\n'))
    parentPort.postMessage({ id, stdout: printed.join('\\n'), ...drain() })
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.stack) || err), ...drain() })
  } finally {
    console.log = log
    ns.activeMutant = undefined
  }
})
/** The coverage and hits recorded here since the last call, cleared in place (the instrumented code holds it). */
function drain() {
  const cov = ns.mutantCoverage
  const copy = cov ? JSON.parse(JSON.stringify(cov)) : undefined
  if (cov) {
    for (const k of Object.keys(cov.static)) delete cov.static[k]
    for (const k of Object.keys(cov.perTest)) delete cov.perTest[k]
  }
  return { coverage: copy, hitCount: ns.hitCount }
}
`

let issuer
const waiting = new Map()
let nextIssue = 0

/** Adds the issuer thread's coverage to this thread's (in place: the instrumented code holds the object). */
function addIssuerCoverage(from) {
  if (!from) return
  ns.mutantCoverage ??= { static: {}, perTest: {} }
  addCoverage(ns.mutantCoverage, from)
}

/** What the CLI command `agentops <args>` printed, run by the issuer thread with the mutant active. */
function issue(args) {
  if (!issuer) {
    const cli = pathToFileURL(join(process.cwd(), 'dist', 'src', 'cli', 'main.js')).href
    issuer = new Worker(ISSUER, { eval: true, workerData: { cli } })
    issuer.unref()
    issuer.on('message', ({ id, stdout, error, coverage, hitCount }) => {
      addIssuerCoverage(coverage)
      if (hitCount !== undefined && ns.hitCount !== undefined) ns.hitCount += hitCount
      const w = waiting.get(id)
      waiting.delete(id)
      if (error) w?.reject(new Error(error))
      else w?.resolve(stdout)
    })
    issuer.on('error', (err) => {
      for (const w of waiting.values()) w.reject(err)
      waiting.clear()
      issuer = undefined
    })
  }
  const id = ++nextIssue
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject })
    issuer.postMessage({
      id,
      args,
      databaseUrl,
      mutant: ns.activeMutant,
      coverageOff: ns.coverageOff,
      hitLimit: ns.hitLimit,
      testId: ns.currentTestId,
    })
  })
}

const commands = {
  track: ({ testId }) => {
    ns.currentTestId = testId
    return {}
  },
  activate: ({ mutant, hitLimit }) => {
    ns.activeMutant = mutant
    // Coverage is the dry run's (no mutant active); a mutant run counts only its mutant's hits (build.mjs).
    ns.coverageOff = mutant !== undefined
    ns.hitLimit = hitLimit
    ns.hitCount = hitLimit === undefined ? undefined : 0
    return {}
  },
  provision: async ({ args }) => ({ stdout: await issue(args) }),
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
