import { describe, expect, it } from 'vitest'
import type { Queryable, Row, SqlValue } from '../../src/domain/ports.js'
import { IdempotencyRepo } from '../../src/store/repos/idempotency.js'

/** A transaction that answers the claim's statements from a script, as PostgreSQL would in the race below. */
function scripted(answers: { one: (Row | undefined)[]; run: number[] }) {
  const sent: string[] = []
  const tx: Queryable = {
    /** Only the claim's DELETE of a stale row (RETURNING what it gives back): as many rows as `run` says. */
    async query<T extends Row = Row>(sql: string): Promise<T[]> {
      sent.push(sql.trim().split(/\s+/)[0] as string)
      const gone: Row = { answer_bytes: 0 }
      return Array.from({ length: answers.run.shift() ?? 0 }, () => gone as T)
    },
    async one<T extends Row = Row>(sql: string, _params?: readonly SqlValue[]): Promise<T | undefined> {
      sent.push(sql.trim().split(/\s+/)[0] as string)
      return answers.one.shift() as T | undefined
    },
    async run(sql: string): Promise<number> {
      sent.push(sql.trim().split(/\s+/)[0] as string)
      return answers.run.shift() ?? 0
    },
    async exec(): Promise<void> {},
  }
  return { tx, sent }
}

const NOW = 1_000_000
const expired = {
  locked: true,
  fingerprint: 'fp',
  state: 'done',
  status: 201,
  headers: '{}',
  body: 'old',
  locked_until: 0,
  expires_at: NOW - 1,
}
const live = {
  fingerprint: 'fp',
  state: 'done',
  status: 201,
  headers: '{}',
  body: 'new',
  locked_until: 0,
  expires_at: NOW + 60_000,
}

describe('a claim that read an expired row on a stale snapshot (PostgreSQL)', () => {
  const repo = new IdempotencyRepo(scripted({ one: [], run: [] }).tx, 'postgres')

  it('replays the answer another holder stored meanwhile instead of deleting it and claiming the key', async () => {
    // The row read predates another holder's commit; the delete of stale rows then finds none to delete.
    const { tx, sent } = scripted({ one: [expired, live], run: [0] })
    expect(await repo.claim(tx, 'ws', 'k', 'fp', NOW)).toEqual({
      kind: 'replay',
      fingerprint: 'fp',
      response: { status: 201, headers: {}, body: 'new' },
    })
    expect(sent).toEqual(['SELECT', 'DELETE', 'SELECT'])
  })

  it('claims the key when the stale row was deleted, or when it is gone altogether', async () => {
    expect(await repo.claim(scripted({ one: [expired], run: [1] }).tx, 'ws', 'k', 'fp', NOW)).toEqual({
      kind: 'claimed',
    })
    expect(
      await repo.claim(scripted({ one: [expired, undefined], run: [0] }).tx, 'ws', 'k', 'fp', NOW),
    ).toEqual({
      kind: 'claimed',
    })
  })
})
