import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The kit's folder (where its package.json is), found from this module whether it runs from `src/` (tests, tsx) or
 * from the build in `dist/src/`, so files shipped beside the code (the contract) are found from both.
 */
function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'openapi'))) return dir
    if (dirname(dir) === dir) throw new Error(`no package root above ${from}`)
  }
}

export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)))
