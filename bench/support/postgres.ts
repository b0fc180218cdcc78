import { createDatabase, startPostgres } from '../../test/support/postgres.js'

/**
 * Runs `measure` on a throwaway PostgreSQL (test/support/postgres.ts), handing it a way to create one fresh database
 * after another, then stops the server. Where none can be started the bench goes on without it and says why.
 */
export async function onPostgres(
  measure: (newDatabase: () => Promise<string>) => Promise<void>,
): Promise<void> {
  const pg = await startPostgres().catch((err: Error) => {
    console.error(`PostgreSQL skipped: ${err.message}`)
    return undefined
  })
  if (!pg) return
  try {
    await measure(() => createDatabase(pg.url))
  } finally {
    await pg.stop()
  }
}
