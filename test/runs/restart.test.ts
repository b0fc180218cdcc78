import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { Writable } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/observability/logger.js'
import { backends } from '../support/backends.js'
import { testPort } from '../support/ports.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { status, traceOf, waitForRun } from './helpers.js'

const BIN = new URL('../../bin/agentops.mjs', import.meta.url).pathname

/** A real server process, so the test can kill it with SIGKILL mid-call: no graceful stop, no finally blocks. */
async function spawnServer(databaseUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: {
      ...process.env,
      PORT: String(await testPort()),
      HOST: '127.0.0.1',
      AGENTOPS_DATABASE_URL: databaseUrl,
      AGENTOPS_RUN_LEASE_MS: '400',
      AGENTOPS_RUN_CONCURRENCY: '1',
      // The address it listens on is in its JSON log's "server started" line, an info line.
      AGENTOPS_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout?.on('data', (d) => {
    out += d
  })
  const deadline = Date.now() + 20_000
  const started = /"msg":"server started"/
  while (!started.test(out)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`server did not start: ${out}`)
    await new Promise((r) => setTimeout(r, 25))
  }
  const line = out.split('\n').find((l) => started.test(l)) ?? '{}'
  return { child, url: String((JSON.parse(line) as { url?: string }).url) }
}

describe.each(backends())('runs survive a killed server on $name', (backend) => {
  let after: TestServer | undefined
  let child: ChildProcess | undefined
  afterAll(async () => {
    child?.kill('SIGKILL')
    await after?.close()
  })

  it('continues running and queued runs, keeps paused ones paused, and loses or repeats no frame', async () => {
    const databaseUrl = await backend.freshUrl()
    // Provision through the CLI against the same store, as an operator would.
    const issued = JSON.parse(
      execFileSync(
        process.execPath,
        [BIN, 'keys', 'create', '--workspace', 'restart', '--tier', 'pro', '--json'],
        {
          env: { ...process.env, AGENTOPS_DATABASE_URL: databaseUrl },
          encoding: 'utf8',
        },
      ),
    ) as { token: string }
    const token = issued.token
    const first = await spawnServer(databaseUrl)
    child = first.child
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${first.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      // biome-ignore lint/suspicious/noExplicitAny: checked by the assertions below
      return (await res.json()) as any
    }
    const tool = (name: string, delay: number) =>
      call('POST', '/v1/tools', {
        name,
        provider: 'builtin:delay',
        config: { delay_ms: delay },
        idempotent: true,
        policy_binding: { envelope: 'default', required_scopes: [] },
      })
    await tool('slow', 1200)
    await tool('quick', 10)
    const agent = await call('POST', '/v1/agents', {
      name: 'a',
      behavior: 'autonomous',
      capabilities: ['slow', 'quick'],
    })
    const running = await call('POST', `/v1/agents/${agent.agent_id}/runs`, {})
    // Concurrency 1: these two wait behind the first run.
    const queued = await call('POST', `/v1/agents/${agent.agent_id}/runs`, {})
    const paused = await call('POST', `/v1/agents/${agent.agent_id}/runs`, {})
    expect((await call('POST', `/v1/runs/${paused.run_id}/pause`)).status).toBe('paused')
    // Kill while the first run's slow call is in flight (its policy decision is recorded, its result is not).
    const deadline = Date.now() + 10_000
    for (;;) {
      const r = await call('GET', `/v1/runs/${running.run_id}/trace?limit=200`)
      if (r.data.some((f: { kind: string }) => f.kind === 'policy.decision')) break
      if (Date.now() > deadline) throw new Error('the first run never reached its first call')
      await new Promise((res) => setTimeout(res, 20))
    }
    child.kill('SIGKILL')
    await once(child, 'exit')
    child = undefined

    const log: string[] = []
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        log.push(chunk.toString())
        done()
      },
    })
    after = await startTestServer({
      databaseUrl,
      config: { runLeaseMs: 400, runConcurrency: 2 },
      logger: createLogger({ level: 'info', destination }),
    })
    const t = after
    for (const id of [running.run_id, queued.run_id]) {
      const done = await waitForRun(t, token, id, status('succeeded'), 15_000)
      const frames = await traceOf(t, token, id)
      expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1))
      expect(frames.map((f) => `${f.kind}:${f.step_id ?? ''}`)).toEqual([
        'run.started:',
        'policy.decision:step_1',
        'tool.call:step_1',
        'policy.decision:step_2',
        'tool.call:step_2',
        'run.succeeded:',
      ])
      expect(done.plan).toEqual({ steps_total: 2, steps_completed: 2, steps_pending: 0, steps_escalated: 0 })
    }
    const stillPaused = await t.request('GET', `/v1/runs/${paused.run_id}`, { token })
    expect(stillPaused.body.status).toBe('paused')
    expect((await t.request('POST', `/v1/runs/${paused.run_id}/resume`, { token })).body.status).toBe(
      'queued',
    )
    await waitForRun(t, token, paused.run_id, status('succeeded'), 15_000)

    // The killed server's one leased run was taken over, and the log says so in one line with its count only:
    // the queued and paused runs had no lease, and no tenant, run or key appears in the line.
    const takeovers = log
      .join('')
      .split('\n')
      .filter((l) => l.includes('replica leases taken over'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(takeovers).toHaveLength(1)
    const [line] = takeovers
    expect(line).toMatchObject({ level: 30, msg: 'replica leases taken over', leases: 'runs', count: 1 })
    expect(Object.keys(line ?? {}).sort()).toEqual(['count', 'leases', 'level', 'msg', 'pid', 'time'])
  })
})
