#!/usr/bin/env node
// Runs the compiled server in dist/ (built by `npm run build`, which `npm ci` and `npm pack` run through `prepare`):
// plain JavaScript, no TypeScript transpiler at run time. In a repository checkout an edit under src/ newer than
// the build is reported, so a stale build is never run silently.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const root = join(import.meta.dirname, '..')
const entry = join(root, 'dist', 'src', 'cli', 'main.js')
if (!existsSync(entry)) {
  console.error('agentops: the server is not built (no dist/); run `npm run build` in the kit first')
  process.exit(2)
}
const stamp = join(root, 'dist', '.built')
if (
  existsSync(join(root, 'src')) &&
  existsSync(stamp) &&
  newestMtime(join(root, 'src')) > statSync(stamp).mtimeMs
) {
  console.error('agentops: src/ changed since the last build; run `npm run build` (running the older build)')
}
const { main } = await import(pathToFileURL(entry).href)
process.exitCode = await main(process.argv.slice(2))

function newestMtime(dir) {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs)
  }
  return newest
}
