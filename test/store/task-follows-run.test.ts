/**
 * A task follows its run whichever comes first: the run's own changes (the scheduler, on another connection, can
 * drive a task's run to its end right after it is started) or the task service attaching the run it started. Found
 * by a 20-run loop of `npm test` on PostgreSQL: a task stayed `queued` after its run had succeeded, because the
 * run's update looked the task up by a `run_id` not attached yet and the late attach then wrote `queued`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { createRepositories } from '../../src/store/repos/index.js'
import { backends } from '../support/backends.js'

const opened: Db[] = []
afterEach(async () => {
  for (const d of opened.splice(0)) await d.close()
})

describe.each(backends())('a task follows its run on $name', (backend) => {
  async function withTask() {
    const db = await openDb(await backend.freshUrl())
    opened.push(db)
    await migrate(db)
    const repos = createRepositories(db)
    await repos.tasks.insert({
      id: 'task_1',
      workspaceId: 'ws_a',
      agentId: 'agt_1',
      description: 'find things',
      dataSource: null,
      priority: 3,
      status: 'queued',
      runId: null,
      result: null,
      createdAt: 1,
      updatedAt: 1,
    })
    return repos
  }

  it('when the run ends before the task service attached it', async () => {
    const repos = await withTask()
    await repos.runs.followTask('task_1', 'run_1', 'running', null, 2)
    await repos.runs.followTask('task_1', 'run_1', 'succeeded', null, 3)
    await repos.tasks.attachRun('task_1', 'run_1', 'queued', 4)
    const task = await repos.tasks.get('ws_a', 'task_1')
    expect(task).toMatchObject({ runId: 'run_1', status: 'succeeded' })
  })

  it('when the task service attached the run first', async () => {
    const repos = await withTask()
    await repos.tasks.attachRun('task_1', 'run_1', 'queued', 2)
    expect(await repos.tasks.get('ws_a', 'task_1')).toMatchObject({ runId: 'run_1', status: 'queued' })
    await repos.runs.followTask('task_1', 'run_1', 'failed', null, 3)
    expect(await repos.tasks.get('ws_a', 'task_1')).toMatchObject({ runId: 'run_1', status: 'failed' })
  })
})
