/**
 * The group read of cached runs' versions (src/store/repos/run-versions.ts), against a store in memory whose
 * statements take their snapshot when sent: a read is answered only by a statement sent after it arrived (so it
 * sees every write committed before it began, even while an older statement is in flight), the reads waiting at
 * one moment share one statement, at most GROUP_READ_MAX runs each, a run is matched in its own workspace only,
 * and a failed statement fails exactly its reads, with its error, the next ones going on.
 * test/store/run-cache.test.ts checks the same promise on PostgreSQL across two replicas.
 */
import { describe, expect, it } from 'vitest'
import { GROUP_READ_MAX, type RunKey, RunVersionReads } from '../../src/store/repos/run-versions.js'

interface Statement {
  keys: RunKey[]
  /** The versions as they were when the statement was sent: its snapshot. */
  snapshot: Map<string, string>
  answer: () => void
  fail: (error: unknown) => void
}

/** Rows `workspace/id` → version; every statement is held until the test answers it. */
function memoryStore(rows: Record<string, string>) {
  const versions = new Map(Object.entries(rows))
  const sent: Statement[] = []
  const read = (keys: readonly RunKey[]) =>
    new Promise<Map<number, string>>((resolve, reject) => {
      const snapshot = new Map(versions)
      const answer = () => {
        const found = new Map<number, string>()
        keys.forEach((k, i) => {
          const v = snapshot.get(`${k.workspaceId}/${k.id}`)
          if (v !== undefined) found.set(i, v)
        })
        resolve(found)
      }
      sent.push({ keys: [...keys], snapshot, answer, fail: reject })
    })
  return { versions, sent, read }
}

const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('RunVersionReads', () => {
  it('answers a read that arrived while a statement was in flight only from a later statement', async () => {
    const store = memoryStore({ 'ws_a/run_1': 'v1' })
    const reads = new RunVersionReads(store.read)
    const early = reads.versionOf('ws_a', 'run_1')
    await turn()
    expect(store.sent).toHaveLength(1)
    // A write commits while the first statement is in flight (its snapshot taken); then a read begins.
    store.versions.set('ws_a/run_1', 'v2')
    const late = reads.versionOf('ws_a', 'run_1')
    await turn()
    expect(store.sent).toHaveLength(1) // the late read waits for the answer, it does not join
    store.sent[0]?.answer()
    expect(await early).toBe('v1')
    await turn()
    expect(store.sent).toHaveLength(2)
    store.sent[1]?.answer()
    expect(await late).toBe('v2')
  })

  it('sends the reads of one moment as one statement, each run once, matched in its own workspace only', async () => {
    const store = memoryStore({ 'ws_a/run_1': 'v1', 'ws_a/run_2': 'v7' })
    const reads = new RunVersionReads(store.read)
    const answers = Promise.all([
      reads.versionOf('ws_a', 'run_1'),
      reads.versionOf('ws_b', 'run_1'), // another workspace's run: not found, whatever the other read finds
      reads.versionOf('ws_a', 'run_1'),
      reads.versionOf('ws_a', 'run_2'),
      reads.versionOf('ws_a', 'run_gone'),
    ])
    await turn()
    expect(store.sent.map((s) => s.keys.map((k) => `${k.workspaceId}/${k.id}`))).toEqual([
      ['ws_a/run_1', 'ws_b/run_1', 'ws_a/run_2', 'ws_a/run_gone'],
    ])
    store.sent[0]?.answer()
    expect(await answers).toEqual(['v1', undefined, 'v1', 'v7', undefined])
  })

  it(`confirms at most ${GROUP_READ_MAX} runs per statement`, async () => {
    const n = 2 * GROUP_READ_MAX + 88
    const rows = Object.fromEntries(Array.from({ length: n }, (_, i) => [`ws_a/run_${i}`, `v${i}`]))
    const store = memoryStore(rows)
    const reads = new RunVersionReads(store.read)
    const answers = Promise.all(Array.from({ length: n }, (_, i) => reads.versionOf('ws_a', `run_${i}`)))
    await turn()
    expect(store.sent.map((s) => s.keys.length)).toEqual([GROUP_READ_MAX, GROUP_READ_MAX, 88])
    for (const s of store.sent) s.answer()
    expect(await answers).toEqual(Array.from({ length: n }, (_, i) => `v${i}`))
  })

  it('fails the reads of a failed statement with its error, and answers the next ones', async () => {
    const store = memoryStore({ 'ws_a/run_1': 'v1' })
    const reads = new RunVersionReads(store.read)
    const failing = [reads.versionOf('ws_a', 'run_1'), reads.versionOf('ws_a', 'run_2')]
    await turn()
    const next = reads.versionOf('ws_a', 'run_1') // arrives while the failing statement is in flight
    const error = Object.assign(new Error('connection lost'), { code: 'CONNECTION_CLOSED' })
    store.sent[0]?.fail(error)
    for (const read of failing) await expect(read).rejects.toBe(error)
    await turn()
    expect(store.sent).toHaveLength(2)
    store.sent[1]?.answer()
    expect(await next).toBe('v1')
  })

  it('fails the reads when the statement cannot even be sent', async () => {
    const error = new Error('The store is closed')
    const reads = new RunVersionReads(() => {
      throw error
    })
    await expect(reads.versionOf('ws_a', 'run_1')).rejects.toBe(error)
    await expect(reads.versionOf('ws_a', 'run_1')).rejects.toBe(error)
  })
})
