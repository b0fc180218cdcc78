/**
 * Opens a SQLite store, writes enough commits for its WAL checkpoints to move to a worker thread, then closes it at
 * top level with nothing else alive, and says "closed": the last thing a server's shutdown does.
 */
import { openDb } from '../../src/store/open.js'

const db = await openDb(`sqlite:${process.argv[2] ?? ''}`)
await db.exec('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)')
for (let i = 0; i < 150; i++) await db.run('INSERT INTO t (k, v) VALUES ($1, $2)', [i, 'x'.repeat(4000)])
await db.close()
process.stdout.write('closed\n')
