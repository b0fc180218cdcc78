/**
 * Typechecks a consumer's program the way a strict user of the client would build it: a tsconfig.json written into
 * the consumer's folder (strict, exactOptionalPropertyTypes, noUncheckedIndexedAccess, NodeNext) and this
 * repository's TypeScript run on it. Resolves tsc's output: '' when the program typechecks.
 */
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

const exec = promisify(execFile)
const TSC = resolve(import.meta.dirname, '../../node_modules/typescript/bin/tsc')

export interface ConsumerTsconfig {
  /** The consumer's files (tsconfig `include`). */
  include: readonly string[]
  /** The `@types` packages it sees (tsconfig `types`); [] for none. */
  types: readonly string[]
  /** Absent: tsc's default (declarations are checked). */
  skipLibCheck?: boolean
  typeRoots?: readonly string[]
}

export async function typecheckConsumer(dir: string, tsconfig: ConsumerTsconfig): Promise<string> {
  const { include, ...options } = tsconfig
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2023',
        lib: ['ES2023'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
        ...options,
      },
      include,
    }),
  )
  const result = await exec(process.execPath, [TSC, '-p', dir], { cwd: dir, timeout: 120_000 }).catch(
    (e: { stdout?: string }) => ({ stdout: e.stdout ?? String(e) }),
  )
  return result.stdout
}
