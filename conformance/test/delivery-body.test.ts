import { describe, expect, it } from 'vitest'
import { eventOf, fieldOf } from '../src/delivery-body.js'

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
