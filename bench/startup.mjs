#!/usr/bin/env node
// Start-to-first-answer of the server: from spawning `node bin/agentops.mjs serve` (a fresh SQLite store in a
// temporary folder, loopback, a free port) to the first 200 from /healthz, polled every 5 ms. Prints every run and
// the median. `--bin <path>` (repeatable) times other entry points, e.g. an older checkout's, alternating runs so
// every entry point sees the same machine load; `--runs N` per entry point (default 7).
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'

const { values } = parseArgs({
  options: { bin: { type: 'string', multiple: true }, runs: { type: 'string', default: '7' } },
})
const bins = (values.bin ?? [join(import.meta.dirname, '..', 'bin', 'agentops.mjs')]).map((b) => resolve(b))
const runs = Math.max(1, Math.min(50, Number(values.runs)))

function freePort() {
  return new Promise((res, rej) => {
    const server = createServer()
    server.once('error', rej)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => res(port))
    })
  })
}

async function once(bin) {
  const dir = mkdtempSync(join(tmpdir(), 'agentops-startup-'))
  const port = await freePort()
  const t0 = performance.now()
  const child = spawn(
    process.execPath,
    [
      bin,
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--database-url',
      `sqlite:${join(dir, 'db')}`,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  )
  try {
    for (let i = 0; i < 6000; i++) {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status === 200,
        () => false,
      )
      if (ok) return performance.now() - t0
      await new Promise((r) => setTimeout(r, 5))
    }
    throw new Error('no 200 from /healthz within 30 s')
  } finally {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
    rmSync(dir, { recursive: true, force: true })
  }
}

const times = new Map(bins.map((bin) => [bin, []]))
for (let i = 0; i < runs; i++) {
  for (const bin of bins) {
    const ms = await once(bin)
    times.get(bin).push(ms)
    console.log(`${bin} run ${i + 1}: ${ms.toFixed(0)} ms`)
  }
}
for (const [bin, all] of times) {
  const sorted = [...all].sort((a, b) => a - b)
  console.log(
    `${bin}: start to first /healthz 200, median of ${runs}: ${sorted[Math.floor(runs / 2)].toFixed(0)} ms (min ${sorted[0].toFixed(0)}, max ${sorted[runs - 1].toFixed(0)})`,
  )
}
