#!/usr/bin/env node
// Compiles the server (src/ and generated/) to dist/ with tsc, without type checking (`npm run typecheck` does
// that), incrementally, then stamps dist/.built so a checkout can tell a build older than its sources (src/,
// generated/, and client/src/, whose webhook signatures and canonical JSON the server imports).
// `--if-stale` builds only when a file under src/ or generated/ is newer than the stamp (what the test setup runs).
// `--with-client` also builds the agentops-client workspace (client/dist) when a client source is newer than its
// build, so tests read, pack and re-export one build and never rebuild it while another test reads it.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
const STAMP = join(root, 'dist', '.built')

function newestMtime(dir) {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs)
  }
  return newest
}

/** Whether dist/ is missing or older than a source. */
export function isStale() {
  if (!existsSync(STAMP)) return true
  const built = statSync(STAMP).mtimeMs
  return ['src', 'generated', 'client/src'].some((dir) => newestMtime(join(root, dir)) > built)
}

/**
 * TypeScript 7's native compiler (the `typescript-native` alias of typescript@7): it type-checks and emits. The
 * `typescript` package stays on 5.9 for the generators that call its JavaScript API (openapi-typescript,
 * @hey-api/openapi-ts), which TypeScript 7 does not offer.
 */
function nativeTsc() {
  return join(dirname(createRequire(import.meta.url).resolve('typescript-native/package.json')), 'bin', 'tsc')
}

export function build() {
  const tsc = nativeTsc()
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--noCheck'], {
    cwd: root,
    stdio: 'inherit',
  })
  writeFileSync(STAMP, `${new Date().toISOString()}\n`)
}

const CLIENT = join(root, 'client')

/** Whether client/dist is missing or older than a client source (tsc rewrites every output file it builds). */
export function clientIsStale() {
  const out = join(CLIENT, 'dist')
  if (!existsSync(join(out, 'src', 'index.js'))) return true
  const sources = Math.max(
    newestMtime(join(CLIENT, 'src')),
    newestMtime(join(CLIENT, 'generated')),
    statSync(join(CLIENT, 'tsconfig.json')).mtimeMs,
  )
  return sources > newestMtime(out)
}

export function buildClient() {
  const tsc = nativeTsc()
  execFileSync(process.execPath, [tsc, '-p', join(CLIENT, 'tsconfig.json')], {
    cwd: CLIENT,
    stdio: 'inherit',
  })
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const ifStale = process.argv.includes('--if-stale')
  if (!ifStale || isStale()) build()
  if (process.argv.includes('--with-client') && (!ifStale || clientIsStale())) buildClient()
}
