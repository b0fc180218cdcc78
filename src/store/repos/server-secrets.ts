import { randomBytes } from 'node:crypto'
import type { Db } from '../db.js'

/**
 * A secret every replica of one store shares (table `server_secrets`), made by whichever replica asks first:
 * the insert that loses the race changes nothing, and every replica then reads the winner's value.
 */
export async function sharedSecret(db: Db, name: string, now: number): Promise<string> {
  await db.run(
    'INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING',
    [name, randomBytes(32).toString('base64url'), now],
  )
  const row = await db.one<{ value: string }>('SELECT value FROM server_secrets WHERE name = $1', [name])
  if (!row) throw new Error(`server secret ${name} could not be stored`)
  return row.value
}

/** The stored secret when one was made, without making one. */
export async function storedSecret(db: Db, name: string): Promise<string | undefined> {
  const row = await db.one<{ value: string }>('SELECT value FROM server_secrets WHERE name = $1', [name])
  return row?.value
}
