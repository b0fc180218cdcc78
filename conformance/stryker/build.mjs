#!/usr/bin/env node
/**
 * The sandbox's build command (run.mjs `buildCommand`): the server's instrumented sources to dist/ (bin/agentops.mjs
 * runs them) and the suite to conformance/dist (the runners import or run it compiled). One program, because
 * Stryker runs the build command without a shell: `a && b` would pass `&& b` to `a` as arguments.
 */
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { coverageSwitchable } from './coverage.mjs'

const root = join(import.meta.dirname, '..', '..')
const node = (args, cwd) => execFileSync(process.execPath, args, { cwd, stdio: 'inherit' })
node([join(root, 'scripts', 'build.mjs')], root)
// Resolved as scripts/build.mjs resolves it: Stryker builds before it links node_modules into the sandbox.
const tsc = join(
  dirname(createRequire(import.meta.url).resolve('typescript-native/package.json')),
  'bin',
  'tsc',
)
node([tsc, '-p', 'tsconfig.build.json', '--noCheck'], join(root, 'conformance'))
// A mutant run counts its mutant's hits alone, not the dry run's coverage (coverage.mjs).
coverageSwitchable(join(root, 'dist'))
