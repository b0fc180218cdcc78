/** Spec §1, §4 agents and tasks: created, read back, deleted. */
import type { Check } from '../check.js'
import { expectStatus, ownId } from '../fixtures.js'
import { obj } from '../http.js'
import { assert, fail } from '../types.js'
import { short, waitUntil } from '../wait.js'
import { expectError } from './assertions.js'

export const resourceChecks: Check[] = [
  {
    id: 'resources.agent-lifecycle',
    title:
      'An agent is created, read back with its fields, deleted, and then answers 404 and takes no run or task',
    level: 'core',
    clauses: ['S1.1', 'S1.7', 'S2.8', 'S4.13'],
    async run(ctx) {
      const name = ctx.name('lifecycle')
      const created = await ctx.http.post('/v1/agents', {
        name,
        behavior: 'hybrid',
        capabilities: ['search'],
      })
      expectStatus(created, [200, 201], 'POST /v1/agents')
      const id = obj(created.body).agent_id ?? obj(created.body).id
      if (typeof id !== 'string') fail(`no agent id in ${short(created.body)}`)
      ctx.cleanup(`delete agent ${name}`, (http) => http.delete(`/v1/agents/${id}`))
      const read = await ctx.http.get(`/v1/agents/${id}`)
      expectStatus(read, 200, 'GET /v1/agents/{id}')
      assert(
        obj(read.body).name === name && obj(read.body).behavior === 'hybrid',
        `the agent reads back as ${short(read.body)}`,
      )
      const deleted = await ctx.http.delete(`/v1/agents/${id}`)
      expectStatus(deleted, [200, 202, 204], 'DELETE /v1/agents/{id}')
      // §4 "Terminates and deletes the agent", its code not shown: a 202 (RFC 9110 §15.3.3, accepted, not yet done)
      // may finish a moment later, so the 404 is awaited within --wait-ms; any other success is done at once.
      const gone =
        deleted.status === 202
          ? await waitUntil(
              `agent ${id} to be gone after its deletion was accepted (202)`,
              () => ctx.http.get(`/v1/agents/${id}`),
              (res) => res.status !== 200,
              ctx.config.waitMs,
            )
          : await ctx.http.get(`/v1/agents/${id}`)
      expectError(gone, 404, 'reading a deleted agent')
      // Gone for writes too: no run starts and no task is assigned for an agent that no longer exists (a refusal,
      // whichever 4xx the deployment names it with).
      const writes = [
        [
          'starting a run for',
          `/v1/agents/${id}/runs`,
          { inputs: {}, mode: 'live', trace_level: 'detailed' },
        ],
        ['assigning a task to', `/v1/agents/${id}/tasks`, { description: 'after the agent', priority: 1 }],
      ] as const
      for (const [what, path, body] of writes) {
        const res = await ctx.http.post(path, body)
        assert(
          res.status >= 400 && res.status < 500,
          `${what} a deleted agent answered ${res.status} ${short(res.body)}, not a refusal`,
        )
      }
    },
  },
  {
    id: 'resources.task-assign-read',
    title: 'A task assigned to an agent reads back with its description and priority',
    level: 'core',
    clauses: ['S1.7', 'S2.9', 'S4.14', 'S8.8'],
    async run(ctx) {
      const agent = await ctx.fx.agent()
      const res = await ctx.http.post(`/v1/agents/${agent}/tasks`, {
        description: 'summarise the quarter',
        data_source: 's3://conformance/input.csv',
        priority: 5,
      })
      expectStatus(res, [200, 201, 202], 'POST /v1/agents/{id}/tasks')
      const id = obj(res.body).task_id ?? obj(res.body).id
      if (typeof id !== 'string') fail(`no task id in ${short(res.body)}`)
      const read = await ctx.http.get(`/v1/tasks/${id}`)
      expectStatus(read, 200, 'GET /v1/tasks/{id}')
      const t = obj(read.body)
      assert(
        t.description === 'summarise the quarter' && t.priority === 5,
        `the task reads back as ${short(t)}`,
      )
    },
  },
  {
    id: 'resources.created-codes',
    title: 'Creation answers 201 (agents, tasks, tools, webhooks); agent delete answers 204',
    level: 'profile',
    clauses: ['S4.13'],
    async run(ctx) {
      const created = await ctx.http.post('/v1/agents', { name: ctx.name('codes'), behavior: 'autonomous' })
      expectStatus(created, 201, 'POST /v1/agents')
      const id = String(ownId(created.body, 'agent'))
      const task = await ctx.http.post(`/v1/agents/${id}/tasks`, { description: 'x' })
      expectStatus(task, 201, 'POST /v1/agents/{id}/tasks')
      const del = await ctx.http.delete(`/v1/agents/${id}`)
      expectStatus(del, 204, 'DELETE /v1/agents/{id}')
      assert(del.text === '', 'the 204 has a body')
    },
  },
]
