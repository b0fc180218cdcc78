/**
 * The reference server as `npm start` runs it: the compiled JavaScript in dist/ (scripts/build.mjs), not src/ through
 * tsx. tsx's transform differs from the shipped build (esbuild's `keepNames` wraps every function made at run time in
 * a `__name` call, which showed in request-path profiles), so the benchmarks that judge the request path load the
 * build. `startServerChild` (./server-child.ts) builds a stale checkout before it starts a server.
 */
import { existsSync } from 'node:fs'

type ServerModule = typeof import('../../src/server.js')

/** `dist/src/server.js` of the checkout this file belongs to, typed as its source. */
export async function compiledServer(): Promise<ServerModule> {
  const entry = new URL('../../dist/src/server.js', import.meta.url)
  if (!existsSync(entry))
    throw new Error(`no build at ${entry.pathname}: run \`npm run build\` in the checkout`)
  const module: ServerModule = await import(entry.href)
  return module
}
