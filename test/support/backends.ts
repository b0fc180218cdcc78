/**
 * The storage backends every store-level test runs on. SQLite always; PostgreSQL when the global setup
 * started one (CI requires it). Use with `describe.each(backends())`.
 */
import { join } from 'node:path'
import { inject } from 'vitest'
import { createDatabase } from './postgres.js'
import { testTempDir } from './temp.js'

export interface Backend {
  name: 'sqlite' | 'postgres'
  /** A fresh database URL for one test (or one file). */
  freshUrl(): Promise<string>
}

export function backends(): Backend[] {
  const list: Backend[] = [
    {
      name: 'sqlite',
      freshUrl: async () => `sqlite:${join(testTempDir('sqlite-'), 'test.db')}`,
    },
  ]
  const pgUrl = inject('postgresUrl')
  if (pgUrl) list.push({ name: 'postgres', freshUrl: () => createDatabase(pgUrl) })
  return list
}
