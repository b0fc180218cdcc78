import type { Migration } from './migration.js'

/**
 * `tasks_run` (001_core) indexed tasks by their run, and no query reads tasks that way: a task is read by its id
 * and workspace, and a run updates its task by the task's id (src/store/repos/tasks.ts, runs.ts followTask). The
 * index only cost a write on every task created and on each change of its run.
 */
export const migration: Migration = {
  id: '011_drop_tasks_run',
  sql: `
DROP INDEX IF EXISTS tasks_run;
`,
}
