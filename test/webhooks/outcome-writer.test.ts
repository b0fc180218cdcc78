/**
 * The outbox's outcome writer (src/domain/outbox/outcomes.ts): the outcomes of attempts ending in one turn of the
 * event loop are written with one call to a store that wants them gathered (PostgreSQL); each caller hears its own outcome's fate only once written;
 * when the shared write fails, each outcome is written alone, so one the store refuses never loses the others.
 */
import { describe, expect, it } from 'vitest'
import { OutcomeWriter } from '../../src/domain/outbox/outcomes.js'
import type { AttemptRecord } from '../../src/domain/webhooks/types.js'

const attempt = (id: string): AttemptRecord => ({
  id,
  attemptsBefore: 0,
  outcome: { kind: 'delivered', statusCode: 200 },
  now: 1_000,
})

/** A store that records what it was asked to write, refuses any call holding `poison`, and has lost `lost`'s lease. */
function store(options: { poison?: string; lost?: string; gathers?: boolean } = {}) {
  const calls: string[][] = []
  const written: string[] = []
  return {
    calls,
    written,
    gathersOutcomes: options.gathers ?? true,
    async recordAttempts(owner: string, attempts: readonly AttemptRecord[]): Promise<Set<string>> {
      expect(owner).toBe('dsp_me')
      calls.push(attempts.map((a) => a.id))
      if (attempts.some((a) => a.id === options.poison)) throw new Error('the store refused the row')
      const ids = attempts.map((a) => a.id).filter((id) => id !== options.lost)
      written.push(...ids)
      return new Set(ids)
    },
  }
}

describe('OutcomeWriter', () => {
  it('writes the outcomes of one turn with one call, each caller told of its own', async () => {
    const s = store({ lost: 'dlv_2' })
    const writer = new OutcomeWriter(s, 'dsp_me')
    const results = await Promise.all(['dlv_1', 'dlv_2', 'dlv_3'].map((id) => writer.record(attempt(id))))
    expect(s.calls).toEqual([['dlv_1', 'dlv_2', 'dlv_3']])
    expect(results).toEqual([true, false, true])
    // A later turn is a write of its own.
    expect(await writer.record(attempt('dlv_4'))).toBe(true)
    expect(s.calls).toEqual([['dlv_1', 'dlv_2', 'dlv_3'], ['dlv_4']])
  })

  it('answers nobody before the write: a caller waits for its outcome to be stored', async () => {
    const s = store()
    const writer = new OutcomeWriter(s, 'dsp_me')
    let told = false
    const pending = writer.record(attempt('dlv_1')).then(() => {
      told = true
    })
    await Promise.resolve()
    expect(told).toBe(false)
    expect(s.written).toEqual([])
    await pending
    expect(s.written).toEqual(['dlv_1'])
  })

  it('writes the others when one outcome of the batch is refused, and fails only its caller', async () => {
    const s = store({ poison: 'dlv_2' })
    const writer = new OutcomeWriter(s, 'dsp_me')
    const results = await Promise.allSettled(
      ['dlv_1', 'dlv_2', 'dlv_3'].map((id) => writer.record(attempt(id))),
    )
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect(s.written.sort()).toEqual(['dlv_1', 'dlv_3'])
    expect(s.calls[0]).toEqual(['dlv_1', 'dlv_2', 'dlv_3'])
    expect(s.calls.slice(1).sort()).toEqual([['dlv_1'], ['dlv_2'], ['dlv_3']])
  })

  it('writes each outcome at once to a store that commits a turn together anyway', async () => {
    const s = store({ gathers: false, lost: 'dlv_2' })
    const writer = new OutcomeWriter(s, 'dsp_me')
    const pending = ['dlv_1', 'dlv_2'].map((id) => writer.record(attempt(id)))
    // Sent before the turn ends, one call each.
    expect(s.calls).toEqual([['dlv_1'], ['dlv_2']])
    expect(await Promise.all(pending)).toEqual([true, false])
  })
})
