import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate } from '../../src/store/migrations/index.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'
import {
  countsFromTrace,
  createAgent,
  registerTool,
  startRun,
  status,
  traceOf,
  waitForRun,
} from './helpers.js'

describe.each(backends())('plan counts kept on the run row on $name', (backend) => {
  let t: TestServer
  let token: string
  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl() })
    token = (await t.createKey()).token
    for (const name of ['search', 'summarize']) await registerTool(t, token, { name })
  })
  afterAll(() => t.close())

  it('are filled in from the trace for runs that existed before the migration', async () => {
    const agent = await createAgent(t, token, 'supervised', ['search', 'summarize'])
    const run = await startRun(t, token, agent)
    const approval = (step: string) =>
      t.request('POST', `/v1/runs/${run.run_id}/steps/${step}/approval`, {
        token,
        body: { decision: 'approve' },
      })
    await waitForRun(t, token, run.run_id, status('awaiting_approval'))
    expect((await approval('step_1')).status).toBe(200)
    const waiting = await waitForRun(
      t,
      token,
      run.run_id,
      (r) => r.status === 'awaiting_approval' && r.awaiting[0]?.step_id === 'step_2',
    )
    const expected = countsFromTrace(await traceOf(t, token, run.run_id), 2)
    expect(waiting.plan).toEqual(expected)
    expect(expected).toMatchObject({ steps_completed: 1, steps_escalated: 2 })

    // Back to the schema before 006, then migrate again: the backfill must reproduce the counts from the frames.
    const db = t.services.db
    await db.exec(
      'ALTER TABLE runs DROP COLUMN steps_completed; ALTER TABLE runs DROP COLUMN steps_escalated',
    )
    await db.run("DELETE FROM schema_migrations WHERE id = '006_run_counts'")
    expect(await migrate(db)).toEqual(['006_run_counts'])
    const again = await t.request('GET', `/v1/runs/${run.run_id}`, { token })
    expect(again.body.plan).toEqual(expected)
  })
})
