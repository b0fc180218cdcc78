import { describe, expect, it } from 'vitest'
import { eventIdOf, eventOf, fieldOf, oneOfEachEvent } from '../src/delivery-body.js'

const d = (body: Record<string, unknown> | undefined) => ({ body })

describe('a delivery’s event, wherever its body keeps it', () => {
  it('reads the kind from event, else type', () => {
    expect(eventOf(d({ event: 'run.started' }))).toBe('run.started')
    expect(eventOf(d({ type: 'run.failed', specversion: '1.0' }))).toBe('run.failed')
    expect(eventOf(d(undefined))).toBeUndefined()
  })

  it('reads a field at the top first, then under data, data.object and payload', () => {
    expect(fieldOf(d({ run_id: 'top', data: { run_id: 'inner' } }), 'run_id')).toBe('top')
    expect(fieldOf(d({ type: 'run.started', data: { run_id: 'r1' } }), 'run_id')).toBe('r1')
    expect(fieldOf(d({ data: { object: { run_id: 'r2' } } }), 'run_id')).toBe('r2')
    expect(fieldOf(d({ payload: { task_id: 't1' } }), 'task_id')).toBe('t1')
    expect(fieldOf(d({ data: 'text', payload: null }), 'run_id')).toBeUndefined()
    expect(fieldOf(d(undefined), 'run_id')).toBeUndefined()
  })
})

describe('events, not deliveries', () => {
  const h = (body: Record<string, unknown> | undefined, headers: Record<string, string> = {}) => ({
    body,
    headers,
  })

  it("reads an event's id from its body's id, else its webhook-id header", () => {
    expect(eventIdOf(h({ id: 'evt_1' }, { 'webhook-id': 'msg_1' }))).toBe('evt_1')
    expect(eventIdOf(h({ id: '' }, { 'webhook-id': 'msg_1' }))).toBe('msg_1')
    expect(eventIdOf(h(undefined))).toBeUndefined()
  })

  it('keeps the first delivery of each event id and every delivery without one', () => {
    const list = [
      h({ id: 'evt_1', n: 1 }),
      h({ n: 2 }),
      h({ id: 'evt_1', n: 3 }),
      h({ n: 4 }, { 'webhook-id': 'msg_2' }),
      h({ n: 5 }, { 'webhook-id': 'msg_2' }),
      h({ n: 6 }),
    ]
    expect(oneOfEachEvent(list).map((x) => x.body?.n)).toEqual([1, 2, 4, 6])
  })
})
