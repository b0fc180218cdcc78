/**
 * A deployment's own commands the suite runs through the shell (its provisioning, its revoke): what they printed and
 * how they ended, bounded in time.
 */
import { spawn } from 'node:child_process'

export interface CommandOutcome {
  /** The exit code; `'timeout'` when the bound ran out (the command is killed), `'unstarted'` when it could not start. */
  code: number | 'timeout' | 'unstarted'
  stdout: string
  /** The end of what it printed on stderr (its last 2,000 characters), or why it could not start. */
  stderr: string
}

/** Runs `command` through the shell, writing `stdin` (when given) to its standard input. */
export function runCommand(command: string, timeoutMs: number, stdin?: string): Promise<CommandOutcome> {
  return new Promise((resolve) => {
    // A process group of its own: at the bound the shell and whatever it started are killed together (a command's
    // child left holding the pipes would keep the outcome waiting).
    const child = spawn(command, {
      shell: true,
      detached: true,
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    let timedOut = false
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-2000)
    })
    // A command that exits without reading its input must not fail the write (EPIPE).
    child.stdin?.on('error', () => {})
    child.stdin?.end(stdin)
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
      } catch {
        child.kill('SIGKILL') // the group is gone already
      }
    }
    const timer = setTimeout(() => {
      timedOut = true
      killGroup()
    }, timeoutMs)
    // Its own group does not hear the suite's Ctrl-C: a suite that ends takes the command with it.
    process.once('exit', killGroup)
    const done = (outcome: CommandOutcome) => {
      clearTimeout(timer)
      process.off('exit', killGroup)
      resolve(outcome)
    }
    child.once('error', (e) => done({ code: 'unstarted', stdout: out, stderr: e.message }))
    child.once('close', (c) => done({ code: timedOut ? 'timeout' : (c ?? 1), stdout: out, stderr: err }))
  })
}

/**
 * How a command that did not succeed ended, as the end of a sentence naming it ("could not start (...)", "did not
 * finish within 60 s", "exited with 3 (its last stderr line)"); undefined once it exited 0.
 */
export function commandFailure(outcome: CommandOutcome, timeoutMs: number): string | undefined {
  const { code, stderr } = outcome
  if (code === 'unstarted') return `could not start (${stderr})`
  if (code === 'timeout') return `did not finish within ${timeoutMs / 1000} s`
  if (code !== 0) return `exited with ${code}${lastErrorLine(stderr)}`
  return undefined
}

/** The last line of a command's stderr, in brackets, or nothing: the reason a failure message gives. */
function lastErrorLine(stderr: string): string {
  const line = stderr.trim().split('\n').at(-1)
  return line ? ` (${line})` : ''
}
