#!/usr/bin/env node
// Compiles the server (src/ and generated/) to dist/ with tsc, without type checking (`npm run typecheck` does
// that), incrementally, then stamps dist/.built so a checkout can tell a build older than its sources (src/,
// generated/, and client/src/, whose webhook signatures and canonical JSON the server imports).
// `--if-stale` builds only when a file under src/ or generated/ is newer than the stamp (what the test setup runs).
// It compiles the conformance suite to conformance/.build too (see SUITE_BUILD), when one of its sources is newer.
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

const SUITE = join(root, 'conformance')
/**
 * The suite compiled for the repository's own runs (bin/agentops-conformance.mjs runs it when it is newer than
 * every source under conformance/src, else the sources through tsx). Not conformance/dist: packing the suite builds
 * that and removes it again, which would pull the build from under a run. One level under conformance/, as dist/
 * is, so the suite finds its package root the same way.
 */
export const SUITE_BUILD = join(SUITE, '.build')
const SUITE_STAMP = join(SUITE_BUILD, '.built')

/** Whether the suite's build is missing or older than one of its sources. */
export function suiteIsStale() {
  if (!existsSync(SUITE_STAMP)) return true
  return newestMtime(join(SUITE, 'src')) > statSync(SUITE_STAMP).mtimeMs
}

export function buildSuite() {
  execFileSync(
    process.execPath,
    [nativeTsc(), '-p', join(SUITE, 'tsconfig.build.json'), '--noCheck', '--outDir', SUITE_BUILD],
    { cwd: SUITE, stdio: 'inherit' },
  )
  writeFileSync(SUITE_STAMP, `${new Date().toISOString()}\n`)
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const ifStale = process.argv.includes('--if-stale')
  if (!ifStale || isStale()) build()
  if (!ifStale || suiteIsStale()) buildSuite()
  if (process.argv.includes('--with-client') && (!ifStale || clientIsStale())) buildClient()
}
