#!/usr/bin/env node
// Runs npm scripts side by side and fails when any of them fails (what `npm test` uses for steps that do not
// compete for the same resource). Each script's output is held back and printed in one piece when it ends, so
// logs never interleave; a line per script gives its outcome and wall time. Every script runs to its end even
// when another failed: one run shows every failure. A failed script's last lines are printed once more at the very
// end, so a log read from its tail (as CI shows it) says why without scrolling past the others' output.
//
//   node scripts/run-parallel.mjs [--jobs N] script ...
//
// `--jobs N` runs at most N at once (default: all), in the order given.
import { spawn } from 'node:child_process'

const args = process.argv.slice(2)
let jobs = Number.POSITIVE_INFINITY
const scripts = []
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--jobs') {
    jobs = Number(args[++i])
    if (!Number.isInteger(jobs) || jobs < 1) {
      console.error(`run-parallel: --jobs wants a positive integer, got ${args[i]}`)
      process.exit(2)
    }
  } else scripts.push(args[i])
}
if (scripts.length === 0) {
  console.error('usage: node scripts/run-parallel.mjs [--jobs N] script ...')
  process.exit(2)
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const children = new Set()

/** Runs one npm script to its end; resolves with its outcome, never rejects. */
function run(script) {
  const started = performance.now()
  return new Promise((resolve) => {
    const chunks = []
    const child = spawn(npm, ['run', '--silent', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: process.env.FORCE_COLOR ?? (process.stdout.isTTY ? '1' : '0') },
    })
    children.add(child)
    child.stdout.on('data', (c) => chunks.push(c))
    child.stderr.on('data', (c) => chunks.push(c))
    const done = (code) => {
      children.delete(child)
      const seconds = ((performance.now() - started) / 1000).toFixed(1)
      const output = Buffer.concat(chunks).toString()
      process.stdout.write(`\n> ${script}\n${output}${output.endsWith('\n') || output === '' ? '' : '\n'}`)
      process.stdout.write(
        `run-parallel: ${script} ${code === 0 ? 'ok' : `FAILED (exit ${code})`} in ${seconds} s\n`,
      )
      resolve({ script, code, seconds, output })
    }
    child.on('error', (err) => {
      chunks.push(Buffer.from(`${err.message}\n`))
      done(1)
    })
    child.on('close', (code, signal) => done(code ?? (signal ? 1 : 0)))
  })
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal)
    process.exit(130)
  })
}

const queue = [...scripts]
const results = []
await Promise.all(
  Array.from({ length: Math.min(jobs, scripts.length) }, async () => {
    for (let script = queue.shift(); script !== undefined; script = queue.shift())
      results.push(await run(script))
  }),
)
const TAIL_LINES = 30
const failed = results.filter((r) => r.code !== 0)
for (const { script, code, output } of failed) {
  const lines = output.trimEnd().split('\n')
  process.stdout.write(
    `\nrun-parallel: ${script} failed (exit ${code}); the last ${Math.min(TAIL_LINES, lines.length)} lines of its output:\n${lines.slice(-TAIL_LINES).join('\n')}\n`,
  )
}
if (failed.length > 0) {
  process.stdout.write(`run-parallel: failed: ${failed.map((r) => r.script).join(', ')}\n`)
  process.exit(1)
}
