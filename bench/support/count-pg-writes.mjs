/**
 * Preloaded into a server child by bench/pg-write-ab.ts (`node --import`): counts the socket writes the process
 * makes to PostgreSQL (the port in AGENTOPS_COUNT_PG_PORT) and the statements in them (each ends with a Sync
 * message, 'S' with length 4). On SIGUSR2 it writes `{"writes":…,"syncs":…}` to AGENTOPS_COUNT_FILE. A request
 * made alone (nothing else in flight) costs one write per round trip.
 */
import { renameSync, writeFileSync } from 'node:fs'
import { Socket } from 'node:net'

const port = Number(process.env.AGENTOPS_COUNT_PG_PORT)
const file = process.env.AGENTOPS_COUNT_FILE
let writes = 0
let syncs = 0

/** Sync messages in a frontend buffer: type 'S' then the length 4, at a message boundary. */
function countSyncs(buffer) {
  let n = 0
  let at = 0
  while (at + 5 <= buffer.length) {
    const length = buffer.readInt32BE(at + 1)
    if (buffer[at] === 0x53 && length === 4) n++
    if (length < 4) break
    at += 1 + length
  }
  return n
}

if (port && file) {
  const write = Socket.prototype.write
  Socket.prototype.write = function countedWrite(chunk, ...rest) {
    if (this.remotePort === port && Buffer.isBuffer(chunk)) {
      writes++
      syncs += countSyncs(chunk)
    }
    return write.call(this, chunk, ...rest)
  }
  // Written aside, then renamed: the reader waits for the file and must never see half of it.
  process.on('SIGUSR2', () => {
    writeFileSync(`${file}.part`, JSON.stringify({ writes, syncs }))
    renameSync(`${file}.part`, file)
  })
}
