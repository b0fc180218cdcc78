#!/usr/bin/env node
// The GitHub Action's step (action.yml at the repository root), runnable anywhere: runs agentops-conformance with
// the action's inputs (INPUT_* variables, as GitHub passes them), writes the JUnit and Markdown reports, appends the
// Markdown to the job summary ($GITHUB_STEP_SUMMARY), sets the `verdict` and `exit-code` outputs ($GITHUB_OUTPUT)
// and exits with the suite's exit code. AGENTOPS_CONFORMANCE_COMMAND names how to run the suite (default: this
// checkout's bin).
import { spawn } from 'node:child_process'
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

const input = (name) => (process.env[`INPUT_${name.toUpperCase().replace(/ /g, '_')}`] ?? '').trim()
const reports = input('reports-dir') || 'conformance-reports'
const junit = join(reports, 'conformance.xml')
const markdown = join(reports, 'conformance.md')
mkdirSync(reports, { recursive: true })

const args = ['--junit', junit, '--markdown', markdown]
for (const [name, flag] of [
  ['base-url', '--base-url'],
  ['token', '--token'],
  ['provision', '--provision'],
  ['revoke', '--revoke'],
  ['issue-expiring', '--issue-expiring'],
  ['config', '--config'],
  ['deadline', '--deadline'],
]) {
  const value = input(name)
  if (value) args.push(flag, value)
}
// Extra flags, split on whitespace (quote nothing: put values with spaces in the config file).
args.push(
  ...input('args')
    .split(/\s+/)
    .filter((a) => a !== ''),
)

const bin = join(import.meta.dirname, '..', 'bin', 'agentops-conformance.mjs')
const command = process.env.AGENTOPS_CONFORMANCE_COMMAND?.split(/\s+/).filter(Boolean) ?? [
  process.execPath,
  bin,
]
const child = spawn(command[0], [...command.slice(1), ...args], { stdio: 'inherit' })
const code = await new Promise((resolve) => child.once('exit', (c, signal) => resolve(c ?? (signal ? 1 : 1))))

const verdict = existsSync(markdown)
  ? (/^#+\s*(?:[^\w\s]+\s*)?(CONFORMANT|NOT CONFORMANT|INCOMPLETE|ERROR)/m.exec(
      readFileSync(markdown, 'utf8'),
    )?.[1] ?? 'ERROR')
  : 'ERROR'
if (process.env.GITHUB_STEP_SUMMARY && existsSync(markdown)) {
  mkdirSync(dirname(process.env.GITHUB_STEP_SUMMARY), { recursive: true })
  appendFileSync(process.env.GITHUB_STEP_SUMMARY, `${readFileSync(markdown, 'utf8')}\n`)
}
if (process.env.GITHUB_OUTPUT) {
  appendFileSync(
    process.env.GITHUB_OUTPUT,
    `verdict=${verdict}\nexit-code=${code}\njunit=${junit}\nmarkdown=${markdown}\n`,
  )
}
process.exitCode = code
