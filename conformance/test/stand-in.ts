/**
 * The stand-in deployment of mutants/serve.ts (the reference behind a proxy playing a dialect or a mutant), started
 * as its own process for the suite's tests that run the CLI against "a server of another team".
 */
import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { testPort } from '../../test/support/ports.js'

const ROOT = resolve(import.meta.dirname, '..', '..')

export interface StandIn {
  baseUrl: string
  /** The command that issues the suite's identities on this deployment. */
  provision: string
  stop(): Promise<void>
}

/** Starts the stand-in with `args` (e.g. `--dialect own-ids-and-pages`) and waits for the line it prints once it serves. */
export async function startStandIn(args: readonly string[] = []): Promise<StandIn> {
  // Both of its ports are the harness's (test/support/ports.ts): free ones, or AGENTOPS_TEST_PORT_BASE's range.
  const ports = ['--port', String(await testPort()), '--reference-port', String(await testPort())]
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'conformance/mutants/serve.ts'), ...ports, ...args],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const line = await new Promise<string>((resolveLine, reject) => {
    let out = ''
    let err = ''
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
      if (out.includes('\n')) resolveLine(out.split('\n')[0] ?? '')
    })
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString()
    })
    child.once('exit', (code) => reject(new Error(`the stand-in exited with ${code}: ${err}`)))
  })
  const { baseUrl, provision } = JSON.parse(line) as { baseUrl: string; provision: string }
  return {
    baseUrl,
    provision,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
    },
  }
}
