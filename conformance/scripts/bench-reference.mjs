// `npm run bench:conformance [-- --runs N]`: times `agentops-conformance --reference` end to end and prints, per run,
// the wall time, the reference server's start, the checks' phase and the machine's load, then the median. The
// target is a --reference run under 10 s on an idle 2-core machine; on a loaded one the load column says why not.
import { spawn } from 'node:child_process'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'

const root = join(import.meta.dirname, '..', '..')
const { values } = parseArgs({ options: { runs: { type: 'string' } }, strict: true })
const runs = Math.max(1, Number(values.runs ?? 3))

function once() {
  return new Promise((resolve) => {
    const started = performance.now()
    let firstCheck
    let readyMs
    let lastCheck
    let verdict = ''
    const child = spawn(process.execPath, [join(root, 'bin', 'agentops-conformance.mjs'), '--reference'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let pending = ''
    child.stdout.on('data', (d) => {
      pending += d.toString()
      for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
        const line = pending.slice(0, i)
        pending = pending.slice(i + 1)
        const now = performance.now() - started
        const ready = /ready (\d+) ms after start/.exec(line)
        if (ready) readyMs = Number(ready[1])
        if (/^\[\s*\d+\//.test(line)) {
          firstCheck ??= now
          lastCheck = now
        }
        if (/^(CONFORMANT|NOT CONFORMANT|INCOMPLETE|ERROR)\b/.test(line)) verdict = line.split(':')[0]
      }
    })
    child.on('exit', (code) =>
      resolve({
        code,
        wall: performance.now() - started,
        readyMs,
        firstCheck,
        lastCheck,
        verdict,
        load: loadavg()[0],
      }),
    )
  })
}

const s = (ms) => (ms === undefined ? '?' : `${(ms / 1000).toFixed(1)} s`)
const results = []
for (let i = 1; i <= runs; i++) {
  const r = await once()
  results.push(r)
  console.log(
    `run ${i}: ${s(r.wall)} wall (reference ready ${s(r.readyMs)}, checks ${s(r.lastCheck - r.firstCheck)}, from first check to exit ${s(r.wall - r.firstCheck)}), ${r.verdict || `exit ${r.code}`}, load ${r.load.toFixed(1)}`,
  )
}
const walls = results.map((r) => r.wall).sort((a, b) => a - b)
console.log(
  `median of ${runs}: ${s(walls[Math.floor(walls.length / 2)])} wall (target: under 10 s on an idle 2-core machine)`,
)
