/**
 * A process that dies (SIGKILL, as `kill -9` would) inside a keyed request's work, after its effect was written
 * and before anything committed: the crash the idempotency tests recover from. Arguments: the database URL, the
 * workspace id, the Idempotency-Key, and `die` (kill itself at once) or `hold` (print "holding" and wait to be
 * killed by the test).
 */

import { loadConfig } from '../../src/config.js'
import { systemClock } from '../../src/domain/clock.js'
import { createServices } from '../../src/services.js'
import { openDb } from '../../src/store/open.js'
import { workspaceRecord } from './workspace.js'

const [databaseUrl = '', workspaceId = '', key = '', mode = 'die'] = process.argv.slice(2)
const config = loadConfig({}, { databaseUrl, workers: false })
const db = await openDb(databaseUrl)
const services = createServices({ db, clock: systemClock, config })
await services.idempotency.once(
  workspaceId,
  key,
  'fingerprint',
  async () => {
    await services.agents.create(workspaceId, { name: `crash-${key}`, behavior: 'autonomous' })
    if (mode === 'hold') {
      process.stdout.write('holding\n')
      await new Promise(() => {})
    }
    process.kill(process.pid, 'SIGKILL')
    return await new Promise(() => {})
  },
  { quota: { workspace: workspaceRecord(workspaceId) } },
)
