/**
 * The runner's lanes (Check.lane): checks of one lane run one after another, in their order, alongside the checks
 * after them (the small-limit workspace's rate-limit checks wait on its windows without holding the run); every lane
 * has ended before the sweep checks; a check's duration and time limit count from its own start, not from its wait
 * in the lane. Synthetic checks, no deployment: one test sends requests, to a local server.
 */
import { createServer } from 'node:http'
import { describe, expect, it } from 'vitest'
import { listenOnTestPort } from '../../test/support/ports.js'
import type { Check } from '../src/check.js'
import { resolveConfig } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { runChecks } from '../src/runner.js'

const contract = Contract.fromFile(resolveConfig([]).config.openapiPath)

/** A check that notes when it starts and ends in `log`, and waits `ms` in between. */
function step(id: string, log: string[], ms: number, extra: Partial<Check> = {}): Check {
  return {
    id,
    title: id,
    level: 'core',
    clauses: [],
    async run() {
      log.push(`start ${id}`)
      await new Promise((r) => setTimeout(r, ms))
      log.push(`end ${id}`)
    },
    ...extra,
  }
}

/** A core check named `id` that runs `body`. */
const check = (id: string, body: Check['run']): Check => ({
  id,
  title: id,
  level: 'core',
  clauses: [],
  run: body,
})

/** The names of the process warnings emitted while `fn` runs, and a turn of the event loop after it. */
async function warningsDuring(fn: () => Promise<void>): Promise<string[]> {
  const warnings: string[] = []
  const onWarning = (w: Error) => warnings.push(w.name)
  process.on('warning', onWarning)
  try {
    await fn()
    await new Promise((r) => setImmediate(r))
    return warnings
  } finally {
    process.off('warning', onWarning)
  }
}

async function run(checks: Check[], options: { checkTimeoutMs?: number } = {}) {
  return runChecks({
    config: resolveConfig(['--seed', '1']).config,
    contract,
    cleanup: false,
    checks,
    ...options,
  })
}

describe('lanes', () => {
  it("runs a lane's checks one after another while the checks after them go on, and ends every lane before the sweeps", async () => {
    const log: string[] = []
    const summary = await run([
      step('lane.first', log, 60, { lane: 'one' }),
      step('lane.second', log, 60, { lane: 'one' }),
      step('other.a', log, 20),
      step('other.b', log, 20),
      step('sweep.after-everything', log, 0),
    ])
    expect(summary.results.map((r) => [r.id, r.outcome])).toEqual([
      ['lane.first', 'pass'],
      ['lane.second', 'pass'],
      ['other.a', 'pass'],
      ['other.b', 'pass'],
      ['sweep.after-everything', 'pass'],
    ])
    // The lane's second check starts once its first has ended; the others do not wait for either.
    expect(log.indexOf('start lane.second')).toBeGreaterThan(log.indexOf('end lane.first'))
    expect(log.indexOf('start other.a')).toBeLessThan(log.indexOf('end lane.first'))
    expect(log.indexOf('end other.b')).toBeLessThan(log.indexOf('end lane.second'))
    // The sweep judges the whole run: both lane checks have ended before it starts.
    expect(log.indexOf('start sweep.after-everything')).toBeGreaterThan(log.indexOf('end lane.second'))
  })

  it('goes on with the next check of a lane after one failed', async () => {
    const log: string[] = []
    const summary = await run([
      {
        id: 'lane.failing',
        title: 'fails',
        level: 'core',
        clauses: [],
        lane: 'one',
        async run() {
          log.push('start lane.failing')
          throw new Error('broken on purpose')
        },
      },
      step('lane.next', log, 5, { lane: 'one' }),
    ])
    expect(summary.results.map((r) => [r.id, r.outcome])).toEqual([
      ['lane.failing', 'fail'],
      ['lane.next', 'pass'],
    ])
  })

  it("counts a check's duration and time limit from its own start, not from its wait in the lane", async () => {
    const log: string[] = []
    // Each takes 300 ms, within the 500 ms limit; the second ends 600 ms after the lane began.
    const summary = await run(
      [step('lane.first', log, 300, { lane: 'one' }), step('lane.second', log, 300, { lane: 'one' })],
      { checkTimeoutMs: 500 },
    )
    expect(summary.results.map((r) => [r.id, r.outcome, r.message])).toEqual([
      ['lane.first', 'pass', undefined],
      ['lane.second', 'pass', undefined],
    ])
    expect(summary.results[1]?.durationMs).toBeLessThan(450)
  })

  it('warns of no listener leak when more than ten checks are under way at once', async () => {
    const warnings = await warningsDuring(async () => {
      const log: string[] = []
      const checks = Array.from({ length: 12 }, (_, i) =>
        step(`lane.own-${i}`, log, 30, { lane: `lane ${i}` }),
      )
      const summary = await runChecks({
        config: resolveConfig(['--seed', '1']).config,
        contract,
        cleanup: false,
        checks,
        signal: new AbortController().signal,
      })
      expect(summary.results.every((r) => r.outcome === 'pass')).toBe(true)
      // All twelve were under way together.
      expect(log.indexOf('end lane.own-0')).toBeGreaterThan(log.indexOf('start lane.own-11'))
    })
    expect(warnings).not.toContain('MaxListenersExceededWarning')
  })

  it('warns of no listener leak when one check has more than ten requests in flight at once', async () => {
    // The one test here that sends requests: to a local server answering each after 50 ms.
    const server = createServer((_req, res) => {
      setTimeout(() => res.end('{}'), 50)
    })
    const port = await listenOnTestPort(server)
    try {
      const many = check('lane.many-requests', async (ctx) => {
        const answers = await Promise.all(Array.from({ length: 12 }, () => ctx.http.get('/v1/agents')))
        if (!answers.every((a) => a.status === 200)) throw new Error('a request was not answered 200')
      })
      const warnings = await warningsDuring(async () => {
        const summary = await runChecks({
          config: resolveConfig(['--seed', '1', '--base-url', `http://127.0.0.1:${port}`]).config,
          contract,
          cleanup: false,
          checks: [many],
          signal: new AbortController().signal,
        })
        expect(summary.results.map((r) => [r.id, r.outcome, r.message])).toEqual([
          ['lane.many-requests', 'pass', undefined],
        ])
      })
      expect(warnings).not.toContain('MaxListenersExceededWarning')
    } finally {
      await new Promise((r) => server.close(r))
    }
  })
})

describe('cleanup', () => {
  it("runs every undo step once the checks' own clients send nothing more, each as the identity that made what it undoes", async () => {
    const deletes: string[] = []
    const server = createServer((req, res) => {
      if (req.method === 'DELETE') deletes.push(`${req.url} ${req.headers.authorization}`)
      res.end('{}')
    })
    const port = await listenOnTestPort(server)
    try {
      const undoing = check('cleanup.two-identities', async (ctx) => {
        const other = ctx.as('secondWorkspace')
        ctx.cleanup('delete agent a', (http) => http.delete('/v1/agents/a'))
        ctx.cleanup('delete agent b', (http) => http.withToken(other.token).delete('/v1/agents/b'))
      })
      const summary = await runChecks({
        config: resolveConfig([
          '--seed',
          '1',
          '--base-url',
          `http://127.0.0.1:${port}`,
          '--token',
          'primary-token',
          '--second-token',
          'second-token',
        ]).config,
        contract,
        checks: [undoing],
      })
      expect(summary.results.map((r) => [r.id, r.outcome, r.message])).toEqual([
        ['cleanup.two-identities', 'pass', undefined],
      ])
      expect(deletes.sort()).toEqual([
        '/v1/agents/a Bearer primary-token',
        '/v1/agents/b Bearer second-token',
      ])
    } finally {
      await new Promise((r) => server.close(r))
    }
  })

  it('says how many undo steps failed and why the first did', async () => {
    const lines: string[] = []
    const failing = check('cleanup.failing-step', async (ctx) => {
      ctx.cleanup('retire tool t1', async () => {
        throw new Error('answered 500')
      })
      ctx.cleanup('retire tool t2', async () => undefined)
    })
    await runChecks({
      config: resolveConfig(['--seed', '1']).config,
      contract,
      checks: [failing],
      log: (line) => lines.push(line),
    })
    expect(lines).toContain('cleanup: 1 of 2 steps failed (the first: retire tool t1: Error: answered 500)')
  })
})

describe('sockets the checks opened', () => {
  /** A socket as a check hands it in; its close never comes by itself. */
  const socket = (readyState: number) => {
    const s = {
      readyState,
      terminated: false,
      terminate() {
        s.terminated = true
      },
      once: () => s,
    }
    return s
  }

  it('closes every one at the end, naming the check of each left open, and not those their check was closing', async () => {
    const lines: string[] = []
    const [open, closing] = [socket(1), socket(2)]
    const opener = (id: string, s: ReturnType<typeof socket>) =>
      check(id, async (ctx) => {
        ctx.opened(s)
      })
    await runChecks({
      config: resolveConfig(['--seed', '1']).config,
      contract,
      cleanup: false,
      checks: [opener('sockets.left-open', open), opener('sockets.closing', closing)],
      log: (line) => lines.push(line),
    })
    expect(lines.filter((l) => l.startsWith('teardown:'))).toEqual([
      'teardown: closed 1 socket(s) left open by sockets.left-open',
    ])
    expect([open.terminated, closing.terminated]).toEqual([true, true])
  })
})

describe("the profile checks' own signal (--bail --strict-profile)", () => {
  it('cuts short the profile checks under way and skips those not begun, while core checks and the sweep go on', async () => {
    const log: string[] = []
    const profileAbort = new AbortController()
    const summary = await runChecks({
      config: resolveConfig(['--seed', '1']).config,
      contract,
      cleanup: false,
      profileSignal: profileAbort.signal,
      onResult: (r) => {
        if (r.level === 'profile' && r.outcome === 'fail') profileAbort.abort(`profile check ${r.id} failed`)
      },
      checks: [
        step('core.slow', log, 400, { overlap: true }),
        step('profile.slow', log, 5000, { level: 'profile', overlap: true }),
        {
          id: 'profile.failing',
          title: 'fails',
          level: 'profile',
          clauses: [],
          async run() {
            await new Promise((r) => setTimeout(r, 50))
            throw new Error('broken on purpose')
          },
        },
        step('profile.later', log, 5, { level: 'profile' }),
        step('sweep.profile-judge', log, 0, { level: 'profile' }),
      ],
    })
    const by = new Map(summary.results.map((r) => [r.id, r]))
    expect(by.get('core.slow')?.outcome).toBe('pass')
    expect(by.get('profile.failing')?.outcome).toBe('fail')
    expect([by.get('profile.slow')?.outcome, by.get('profile.slow')?.message]).toEqual([
      'skip',
      'cut short: profile check profile.failing failed',
    ])
    // Ended at the failure, not after its own wait.
    expect(by.get('profile.slow')?.durationMs).toBeLessThan(2000)
    expect([by.get('profile.later')?.outcome, by.get('profile.later')?.message]).toEqual([
      'skip',
      'not run: profile check profile.failing failed',
    ])
    expect(log).not.toContain('start profile.later')
    // The core check under way ended on its own, and the sweep judged the run after it.
    expect(log.indexOf('start sweep.profile-judge')).toBeGreaterThan(log.indexOf('end core.slow'))
  })
})
