/**
 * Which suite `agentops-conformance` runs: installed, the package's dist/; in the repository, the kit's build of the
 * suite (.build/) while it is newer than every source, else the sources through tsx, so an edit is never shadowed by
 * a stale build. Each case is a copy of the bin beside stand-in entries that say which one ran.
 */
import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { PACKAGE_ROOT, REPO_ROOT } from '../src/config.js'

const exec = promisify(execFile)
// Under the repository (.tmp/ is ignored by git): the stand-in sources import tsx from its node_modules.
mkdirSync(join(REPO_ROOT, '.tmp'), { recursive: true })
const base = mkdtempSync(join(REPO_ROOT, '.tmp', 'conformance-bin-'))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const entry = (which: string) =>
  `export async function runProgram(args) { console.log(${JSON.stringify(which)}, args.join(' ')) }\n`

/** A package layout with the given entries; `stamp` writes .build/.built. */
function layout(name: string, parts: { src?: boolean; build?: boolean; stamp?: boolean; dist?: boolean }) {
  const root = join(base, name)
  mkdirSync(join(root, 'bin'), { recursive: true })
  copyFileSync(
    join(PACKAGE_ROOT, 'bin', 'agentops-conformance.mjs'),
    join(root, 'bin', 'agentops-conformance.mjs'),
  )
  if (parts.src) {
    mkdirSync(join(root, 'src'))
    writeFileSync(join(root, 'src', 'cli.ts'), entry('source'))
  }
  if (parts.build) {
    mkdirSync(join(root, '.build'))
    writeFileSync(join(root, '.build', 'cli.js'), entry('build'))
    if (parts.stamp) writeFileSync(join(root, '.build', '.built'), 'now\n')
  }
  if (parts.dist) {
    mkdirSync(join(root, 'dist'))
    writeFileSync(join(root, 'dist', 'cli.js'), entry('dist'))
  }
  return root
}

async function ran(root: string): Promise<string> {
  const { stdout } = await exec(process.execPath, [join(root, 'bin', 'agentops-conformance.mjs'), '--list'])
  return stdout.trim()
}

describe('bin/agentops-conformance.mjs', () => {
  it('runs the kit build when it is newer than every source, passing the arguments on', async () => {
    const root = layout('fresh', { src: true, build: true, stamp: true })
    const past = new Date(Date.now() - 60_000)
    utimesSync(join(root, 'src', 'cli.ts'), past, past)
    expect(await ran(root)).toBe('build --list')
  })

  it('runs the sources through tsx when one is newer than the build, or no build is stamped', async () => {
    const stale = layout('stale', { src: true, build: true, stamp: true })
    const future = new Date(Date.now() + 60_000)
    utimesSync(join(stale, 'src', 'cli.ts'), future, future)
    expect(await ran(stale)).toBe('source --list')
    expect(await ran(layout('unstamped', { src: true, build: true }))).toBe('source --list')
  }, 30_000)

  it('runs dist/ where no sources are (the installed package)', async () => {
    expect(await ran(layout('installed', { dist: true, build: true, stamp: true }))).toBe('dist --list')
  })
})
