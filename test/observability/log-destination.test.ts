/**
 * The server's log on stdout (not a terminal) is written in batches: every line still arrives, whole and in order,
 * `logger.flush()` writes what is pending, and a process that ends writes its last lines before it goes, also when
 * they are fewer than a batch and the once-a-second flush has not come yet.
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** Runs `body` in a fresh Node process with `logger` (createLogger at info, default destination); its stdout. */
function stdoutOf(body: string): string {
  const script = `import { writeSync } from 'node:fs'
import { createLogger } from './src/observability/logger.ts'
const logger = createLogger({ level: 'info', pretty: false })
${body}`
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  expect(run.status, run.stderr).toBe(0)
  return run.stdout
}

const parsed = (text: string) =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { msg: string; i?: number; pad?: string })

describe('the log written to stdout', () => {
  it('writes the last lines of a process that ends before a batch filled or a second passed', () => {
    const out = stdoutOf(`for (let i = 0; i < 3; i++) logger.info({ i }, 'line')`)
    expect(parsed(out).map((l) => l.i)).toEqual([0, 1, 2])
  })

  it('keeps every line whole and in order across many batches', () => {
    const out = stdoutOf(
      `for (let i = 0; i < 5000; i++) logger.info({ i, pad: 'x'.repeat(i % 200) }, 'line')`,
    )
    const lines = parsed(out)
    expect(lines).toHaveLength(5000)
    expect(lines.every((l, i) => l.i === i)).toBe(true)
  })

  it('keeps lines of multi-byte characters whole, and a line larger than a batch', () => {
    // Lines are encoded into the batch's bytes as they come: a batch must never cut a character or a line.
    const out = stdoutOf(
      `for (let i = 0; i < 2000; i++) logger.info({ i, pad: 'é漢😀'.repeat(i % 40) }, 'line')
logger.info({ i: 2000, pad: '漢'.repeat(40000) }, 'line')
logger.info({ i: 2001, pad: '' }, 'line')`,
    )
    const lines = parsed(out)
    expect(lines.map((l) => l.i)).toEqual([...Array(2002).keys()])
    expect(lines.slice(0, 2000).every((l, i) => l.pad === 'é漢😀'.repeat(i % 40))).toBe(true)
    expect(lines[2000]?.pad).toBe('漢'.repeat(40000))
  })

  it('writes what is pending when the logger is flushed', () => {
    // The marker goes straight to the descriptor: it follows the lines only if flush() wrote them first.
    const out = stdoutOf(`logger.info({ i: 0 }, 'line')
logger.info({ i: 1 }, 'line')
logger.flush()
writeSync(1, 'MARK\\n')`)
    expect(out.split('\n').filter((l) => l !== '')).toEqual([
      expect.stringContaining('"i":0'),
      expect.stringContaining('"i":1'),
      'MARK',
    ])
  })

  it('shares one batch among the loggers of a process: their lines in the order logged, one exit listener', () => {
    // A process that builds several servers (tests, an embedding) must not gain a buffer, a timer and an exit
    // listener per server, nor reorder lines between loggers.
    const out = stdoutOf(`const before = process.listenerCount('exit')
const loggers = [logger, ...Array.from({ length: 20 }, () => createLogger({ level: 'info', pretty: false }))]
for (let i = 0; i < 63; i++) loggers[i % loggers.length].info({ i }, 'line')
logger.flush()
writeSync(1, 'exit listeners added: ' + (process.listenerCount('exit') - before) + '\\n')`)
    const [listeners, ...lines] = out
      .split('\n')
      .filter((l) => l !== '')
      .reverse()
    expect(listeners).toBe('exit listeners added: 0')
    expect(parsed(lines.reverse().join('\n')).map((l) => l.i)).toEqual([...Array(63).keys()])
  })
})
