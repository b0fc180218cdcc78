#!/usr/bin/env node
// Installed, the package runs its compiled dist/. Inside the repository (src/ present) it runs the kit's build of the
// suite (.build/, which `npm run build` compiles beside the server) when that is newer than every source, else the
// TypeScript sources through the repository's tsx: an edit is never shadowed by a stale build.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const root = join(import.meta.dirname, '..')
const stamp = join(root, '.build', '.built')
let cli
if (!existsSync(join(root, 'src', 'cli.ts'))) {
  cli = await import('../dist/cli.js')
} else if (existsSync(stamp) && newestMtime(join(root, 'src')) <= statSync(stamp).mtimeMs) {
  cli = await import(pathToFileURL(join(root, '.build', 'cli.js')).href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  cli = await import('../src/cli.ts')
}
await cli.runProgram(process.argv.slice(2))

function newestMtime(dir) {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs)
  }
  return newest
}
