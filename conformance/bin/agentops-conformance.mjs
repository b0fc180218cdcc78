#!/usr/bin/env node
// Installed, the package runs its compiled dist/; inside the repository (src/ present, no build), the TypeScript
// sources run through the repository's tsx, so an edit is never shadowed by a stale build.
import { existsSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..')
let cli
if (existsSync(join(root, 'src', 'cli.ts'))) {
  const { register } = await import('tsx/esm/api')
  register()
  cli = await import('../src/cli.ts')
} else {
  cli = await import('../dist/cli.js')
}
await cli.runProgram(process.argv.slice(2))
