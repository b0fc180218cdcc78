/**
 * conformance/README.md "Your own server in five minutes", kept true: the walk-through block is run as printed
 * (after its install command, which the test's checkout has done) against a server of another team's (the stand-in
 * of mutants/serve.ts playing the own-ids-and-pages dialect), in an empty folder, and must end CONFORMANT in at most
 * five commands. Its time is printed, not asserted (docs/performance.md has the measured figure).
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDir } from './scratch.js'
import { type StandIn, startStandIn } from './stand-in.js'

const ROOT = resolve(import.meta.dirname, '..', '..')

/** The commands of the walk-through block, as printed. */
export function walkthrough(): string[] {
  const readme = readFileSync(join(ROOT, 'conformance', 'README.md'), 'utf8')
  const block = /<!-- walkthrough -->\s*```sh\n([\s\S]*?)```\s*<!-- \/walkthrough -->/.exec(readme)?.[1]
  if (!block) throw new Error('conformance/README.md has no walk-through block')
  return block
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
}

let standIn: StandIn
let baseUrl: string
let provision: string

beforeAll(async () => {
  standIn = await startStandIn(['--dialect', 'own-ids-and-pages'])
  ;({ baseUrl, provision } = standIn)
}, 120_000)

afterAll(() => standIn?.stop())

describe('the walk-through in conformance/README.md', () => {
  it('takes at most five commands from the README to CONFORMANT against a server of another team', () => {
    const commands = walkthrough()
    expect(commands.length).toBeLessThanOrEqual(5)
    expect(commands[0]).toBe('npm ci')
    const dir = scratchDir('walkthrough-')
    const started = performance.now()
    let last = { status: 0 as number | null, stdout: '', stderr: '' }
    for (const printed of commands.slice(1)) {
      // The block's server and provisioning command are the stand-in's; `npx agentops-conformance` is this
      // checkout's bin (as npx resolves it in a clone), run from an empty folder so the files land there.
      const command = printed
        .replaceAll('http://127.0.0.1:8080', baseUrl)
        .replace(/--provision "[^"]*"/, `--provision "${provision}"`)
        .replace(/^npx agentops-conformance/, `node ${join(ROOT, 'bin', 'agentops-conformance.mjs')}`)
      last = spawnSync('sh', ['-c', command], { cwd: dir, encoding: 'utf8', timeout: 300_000 })
      // Every step succeeds: init writes the file, --plan finds nothing to skip, the run is CONFORMANT.
      expect(last.status, `${printed}\n${last.stdout.slice(-3000)}\n${last.stderr}`).toBe(0)
    }
    const seconds = (performance.now() - started) / 1000
    console.log(`walk-through: ${commands.length} commands, ${seconds.toFixed(1)} s after the install`)
    expect(last.stdout.trim().split('\n').at(-1)).toMatch(/^CONFORMANT: /)
    expect(readFileSync(join(dir, 'reports', 'conformance.xml'), 'utf8')).toMatch(/verdict: CONFORMANT/)
  }, 600_000)
})
