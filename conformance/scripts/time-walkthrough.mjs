// `npm run bench:walkthrough [-- --from DIR --keep --dry-run]`: times conformance/README.md's walk-through
// ("Your own server in five minutes") as a new user meets it: a fresh clone of the kit in an empty temporary folder,
// then the README's commands as printed (its `npm ci` too), each timed, against the stand-in server the README names
// (conformance/mutants/serve.ts playing the own-ids-and-pages dialect, started from the clone once `npm ci` has
// installed it; its start-up is printed but not counted, it stands for a server the team already runs). Prints the
// wall time of each command and the total, and fails when a command fails or the last line is not CONFORMANT.
// Measure on a quiet machine: the figure is meant for docs/performance.md, not for a loaded CI runner.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'

const ROOT = resolve(import.meta.dirname, '..', '..')
const { values } = parseArgs({
  options: {
    // The repository to clone (default: this checkout; its HEAD commit, not uncommitted changes).
    from: { type: 'string' },
    // Keep the temporary folder (the clone and its reports) instead of removing it.
    keep: { type: 'boolean' },
    // Print the commands as they would run, run nothing.
    'dry-run': { type: 'boolean' },
  },
  strict: true,
})

/** The walk-through block's commands, as printed (the same reading as conformance/test/walkthrough.test.ts). */
function walkthrough(readmePath) {
  const readme = readFileSync(readmePath, 'utf8')
  const block = /<!-- walkthrough -->\s*```sh\n([\s\S]*?)```\s*<!-- \/walkthrough -->/.exec(readme)?.[1]
  if (!block) throw new Error(`${readmePath} has no walk-through block`)
  return block
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
}

/** The README's server address is 127.0.0.1:8080: used when free, else another free port stands in for it. */
async function standInPort() {
  const tryListen = (port) =>
    new Promise((res) => {
      const s = createServer()
      s.once('error', () => res(null))
      s.listen(port, '127.0.0.1', () => {
        const address = s.address()
        s.close(() => res(typeof address === 'object' && address ? address.port : null))
      })
    })
  return (await tryListen(8080)) ?? (await tryListen(0))
}

/** Runs one shell command in `cwd`, its output passed through; resolves with its exit code and last stdout line. */
function sh(command, cwd) {
  return new Promise((res) => {
    const child = spawn('sh', ['-c', command], { cwd, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      process.stdout.write(d)
    })
    child.once('exit', (code) => res({ code, last: out.trim().split('\n').at(-1) ?? '' }))
  })
}

/** Starts the stand-in from the clone; resolves with its address, its provisioning command and a stop function. */
function startStandIn(kit, port) {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'conformance/mutants/serve.ts',
      '--dialect',
      'own-ids-and-pages',
      '--port',
      String(port),
    ],
    { cwd: kit, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  return new Promise((res, rej) => {
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => {
      out += d
      if (out.includes('\n')) {
        const { baseUrl, provision } = JSON.parse(out.split('\n')[0])
        res({
          baseUrl,
          provision,
          stop: () =>
            new Promise((done) => {
              // Ended already, by a code or by a signal: its 'exit' will not come again.
              if (child.exitCode !== null || child.signalCode !== null) return done()
              child.once('exit', done)
              child.kill('SIGTERM')
            }),
        })
      }
    })
    child.stderr.on('data', (d) => {
      err += d
    })
    child.once('exit', (code) => rej(new Error(`the stand-in exited with ${code}: ${err}`)))
  })
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`
const from = resolve(values.from ?? ROOT)
const commands = walkthrough(join(from, 'conformance', 'README.md'))
const port = await standInPort()
const address = `http://127.0.0.1:${port}`
// What the test substitutes too: the README's server address and provisioning command are the stand-in's.
const asRun = (printed, provision) =>
  printed
    .replaceAll('http://127.0.0.1:8080', address)
    .replace(/--provision "[^"]*"/, `--provision "${provision ?? '<the stand-in’s provisioning command>'}"`)

if (values['dry-run']) {
  console.log(`git clone ${from} <temporary folder>/kit, then in it:`)
  for (const printed of commands) console.log(`  ${asRun(printed)}`)
  console.log(`(the stand-in starts after ${commands[0]}, at ${address})`)
  process.exit(0)
}

const dir = mkdtempSync(join(tmpdir(), 'agentops-walkthrough-'))
const kit = join(dir, 'kit')
const rows = []
let standIn
let failed = ''
try {
  const head = execFileSync('git', ['-C', from, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
  let started = performance.now()
  execFileSync('git', ['clone', '--quiet', from, kit], { stdio: 'inherit' })
  rows.push({ what: `git clone (commit ${head})`, ms: performance.now() - started, counted: false })
  for (const [i, printed] of commands.entries()) {
    const command = asRun(printed, standIn?.provision)
    console.log(`\n$ ${command}`)
    started = performance.now()
    const { code, last } = await sh(command, kit)
    rows.push({ what: printed, ms: performance.now() - started, counted: true })
    if (code !== 0) {
      failed = `\`${printed}\` exited ${code}`
      break
    }
    if (i === commands.length - 1 && !/^CONFORMANT: /.test(last))
      failed = `the last line is not CONFORMANT: ${last}`
    if (i === 0) {
      // The team's own server, already running in their world: started now that the clone has its packages.
      started = performance.now()
      standIn = await startStandIn(kit, port)
      rows.push({
        what: `(stand-in server up at ${standIn.baseUrl})`,
        ms: performance.now() - started,
        counted: false,
      })
    }
  }
} finally {
  await standIn?.stop()
  if (values.keep) console.log(`\nkept ${dir}`)
  else rmSync(dir, { recursive: true, force: true })
}

const counted = rows.filter((r) => r.counted)
const total = counted.reduce((sum, r) => sum + r.ms, 0)
console.log(
  `\nwalk-through of conformance/README.md, ${new Date().toISOString()}, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
)
for (const r of rows)
  console.log(`${seconds(r.ms).padStart(9)}  ${r.counted ? '' : '(not counted) '}${r.what}`)
console.log(
  `${seconds(total).padStart(9)}  total of ${counted.length} commands (target: ≤ 5 commands, ≤ 5 minutes)`,
)
if (failed) {
  console.error(`walk-through failed: ${failed}`)
  process.exit(1)
}
