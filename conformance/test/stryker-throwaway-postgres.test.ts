/**
 * `conformance:stryker --postgres auto` / `--also-postgres auto`: the run's throwaway PostgreSQL
 * (stryker/throwaway-postgres.ts) takes connections at the URL it prints, and is stopped, its server gone, once the
 * process that started it goes (its stdin ends) or tells it to (SIGTERM).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import postgres from 'postgres'
import { describe, expect, inject, it } from 'vitest'

const SCRIPT = join(import.meta.dirname, '..', 'stryker', 'throwaway-postgres.ts')

function start(): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', 'tsx', SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] })
}

async function urlOf(child: ChildProcessWithoutNullStreams): Promise<string> {
  let out = ''
  for await (const chunk of child.stdout) {
    out += String(chunk)
    const end = out.indexOf('\n')
    if (end >= 0) return (JSON.parse(out.slice(0, end)) as { url: string }).url
  }
  throw new Error(`the throwaway PostgreSQL printed no URL: ${out}`)
}

async function answers(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {} })
  try {
    const [row] = await sql<{ one: number }[]>`SELECT 1 AS one`
    return row?.one === 1
  } catch {
    return false
  } finally {
    await sql.end({ timeout: 1 })
  }
}

// Where the tests have a PostgreSQL, the machine can start another the same way.
describe.skipIf(!inject('postgresUrl'))('conformance:stryker --also-postgres auto', () => {
  it.each([
    ['its parent goes (stdin ends)', (child: ChildProcessWithoutNullStreams) => child.stdin.end()],
    ['it is told to stop (SIGTERM)', (child: ChildProcessWithoutNullStreams) => child.kill('SIGTERM')],
  ])(
    'serves at the URL it prints, and is gone once %s',
    async (_, end) => {
      const child = start()
      const url = await urlOf(child)
      expect(await answers(url)).toBe(true)
      const exited = once(child, 'exit')
      end(child)
      const [code] = await exited
      expect(code).toBe(0)
      expect(await answers(url)).toBe(false)
    },
    60_000,
  )
})
