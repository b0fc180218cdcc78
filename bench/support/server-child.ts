/**
 * A server under measurement in its own process, so the load generator never shares its event loop: a bench script
 * (bench/http-targets.ts, bench/queue-server.ts) run on tsx, which prints one JSON line starting `{"url":` once it
 * listens. Its stdout is read up to that line, then drained and dropped, as a log collector would read the request
 * log of a server as deployed. Every child still running when this process exits is sent SIGTERM.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { Agent } from 'node:http'
import { request } from 'node:http'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SERVER_NODE_OPTIONS, SERVER_V8_FLAGS } from '../../src/cli/node-options.js'
import { onCores } from './cpu-pinning.js'

/** This checkout. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

const START_TIMEOUT_MS = 60_000
const STOP_TIMEOUT_MS = 15_000

const children = new Set<ChildProcess>()

/**
 * SIGTERM to every server child still running, without waiting. A bench calls it when it is done: a child's drained
 * stdout keeps this process alive until the child exits.
 */
export function stopServerChildren(): void {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM')
}
process.on('exit', stopServerChildren)

export interface ServerChildOptions {
  /** The script under bench/ (its file name) and its arguments. */
  script: string
  args?: readonly string[]
  /** Node's own options, before the script (e.g. --cpu-prof). */
  nodeArgs?: readonly string[]
  /** Added to this process's environment; NODE_ENV is production unless set here. */
  env?: Readonly<Record<string, string>>
  /** The checkout the script runs from (and in); default this one. */
  root?: string
  /** How errors name the server. */
  name?: string
  /** The cores the server runs on (taskset's list form, bench/support/cpu-pinning.ts); default wherever. */
  cpus?: string
}

/** The checkouts whose build this process has made current: once each, not per server started. */
const built = new Set<string>()

/**
 * Compiles the checkout's server to dist/ when a source is newer than its build (scripts/build.mjs --if-stale): the
 * benchmarks measure the build `npm start` runs (./compiled-server.ts). Synchronous, so two servers starting at once
 * never build together.
 */
function buildIfStale(root: string): void {
  if (built.has(root)) return
  const build = join(root, 'scripts', 'build.mjs')
  if (existsSync(build))
    execFileSync(process.execPath, [build, '--if-stale'], { cwd: root, stdio: 'inherit' })
  built.add(root)
}

/** Starts the script and resolves with its `{"url": …}` line and the process, once it listens. */
export async function startServerChild<T extends { url: string }>(
  options: ServerChildOptions,
): Promise<T & { child: ChildProcess }> {
  const root = options.root ?? ROOT
  const name = options.name ?? 'the server'
  buildIfStale(root)
  const [command, args] = onCores(options.cpus, process.execPath, [
    // Every side under the Node options and V8 flags the server is deployed with (bare Hono too: the same VM, only
    // the code differs), then the caller's.
    ...SERVER_NODE_OPTIONS,
    ...SERVER_V8_FLAGS,
    ...(options.nodeArgs ?? []),
    '--import',
    'tsx',
    join(root, 'bench', options.script),
    ...(options.args ?? []),
  ])
  const child = spawn(command, args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_ENV: 'production', ...options.env },
  })
  children.add(child)
  child.once('exit', () => children.delete(child))
  const info = await new Promise<T>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within ${START_TIMEOUT_MS / 1000} s`)),
      START_TIMEOUT_MS,
    )
    const read = (d: Buffer) => {
      out += d.toString()
      // The script's own line; the server's log lines (JSON too) come before and after it.
      const line = out.split('\n').find((l) => l.startsWith('{"url":'))
      if (!line) return
      clearTimeout(timer)
      child.stdout?.off('data', read)
      child.stdout?.resume()
      resolve(JSON.parse(line) as T)
    }
    child.stdout?.on('data', read)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited with ${code}`))
    })
  })
  return { ...info, child }
}

/** SIGTERM (the server's clean shutdown), then SIGKILL if it has not exited within 15 s. */
export async function stopServerChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  await Promise.race([exited, new Promise((r) => setTimeout(r, STOP_TIMEOUT_MS))])
  if (child.exitCode === null) child.kill('SIGKILL')
}

/** One authenticated GET over `agent` (a keep-alive connection), its body read and dropped; resolves the status. */
export function getStatus(agent: Agent, url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume()
      res.once('end', () => resolve(res.statusCode ?? 0))
    })
    req.once('error', reject)
    req.end()
  })
}
