/**
 * The one-file distribution: `npm run conformance:bundle` builds conformance/bundle/agentops-conformance.mjs; this
 * builds the same file into an empty temp folder and runs it from there (no node_modules anywhere above it, only
 * PATH in its environment) against the reference server, which the test starts, with --base-url and the tokens a
 * foreign deployment would give. Prints the bundle's size.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testPort } from '../../test/support/ports.js'
import { PACKAGE_ROOT } from '../src/config.js'
import { type ReferenceServer, startReference } from '../src/reference.js'

const exec = promisify(execFile)

describe('the one-file bundle', () => {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-bundle-'))
  const file = join(dir, 'agentops-conformance.mjs')
  let reference: ReferenceServer | undefined
  let receiverPort = 0
  const suite = (args: string[]) =>
    exec(process.execPath, [file, ...args], {
      cwd: dir,
      timeout: 180_000,
      env: { PATH: process.env.PATH ?? '' },
      maxBuffer: 16 * 1024 * 1024,
    }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({
        code: e.code ?? -1,
        stdout: e.stdout ?? '',
        stderr: e.stderr ?? '',
      }),
    )

  beforeAll(async () => {
    // The suite's webhook receiver listens on this port: the reference's one private target.
    receiverPort = await testPort()
    const started = startReference(() => {}, undefined, {
      port: await testPort(),
      receiverTarget: `127.0.0.1:${receiverPort}`,
    })
    started.catch(() => undefined)
    const { stdout } = await exec(
      process.execPath,
      [join(PACKAGE_ROOT, 'scripts', 'bundle.mjs'), '--out', file],
      {
        timeout: 120_000,
      },
    )
    console.log(stdout.trim())
    reference = await started
  }, 180_000)

  afterAll(async () => {
    await reference?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('is one file: nothing else in its folder, no node_modules', () => {
    expect(readdirSync(dir)).toEqual(['agentops-conformance.mjs'])
    expect(statSync(file).size).toBeLessThan(5_000_000)
  })

  it('runs every check against the reference server from an empty folder and ends CONFORMANT (exit 0)', async () => {
    const t = reference!.tokens
    const r = await suite([
      '--base-url',
      reference!.baseUrl,
      '--token',
      t.primary,
      '--second-token',
      t.secondWorkspace!,
      '--narrow-token',
      t.narrowScope!,
      '--runs-only-token',
      t.runsOnly!,
      '--limited-token',
      t.rateLimited!,
      '--limited-peer-token',
      t.rateLimitedPeer!,
      '--expired-token',
      t.expired!,
      '--standard-tier-token',
      t.standardTier!,
      '--pro-tier-token',
      t.proTier!,
      '--receiver-port',
      String(receiverPort),
    ])
    expect(r.stderr).toBe('')
    const last = r.stdout.trim().split('\n').at(-1)
    expect(last, r.stdout.slice(-3000)).toMatch(
      /^CONFORMANT: all \d+ core checks (that apply )?ran and passed/,
    )
    expect(r.code).toBe(0)
  }, 180_000)

  it('given only a base URL and one token, says INCOMPLETE (exit 3) and names the settings it lacks', async () => {
    const r = await suite([
      '--base-url',
      reference!.baseUrl,
      '--token',
      reference!.tokens.primary,
      '--only',
      'auth.,scoping.agent-404',
    ])
    const last = r.stdout.trim().split('\n').at(-1)
    expect(last).toMatch(
      /^INCOMPLETE: no core check failed, but \d+ of \d+ core checks did not run: .*--expired-token.*--second-token/,
    )
    expect(r.code).toBe(3)
  }, 180_000)
})
