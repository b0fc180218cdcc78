import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { ApiError } from '../../src/domain/errors.js'
import {
  allowedActions,
  RUN_STATUSES,
  TERMINAL,
  TRANSITIONS,
  transition,
} from '../../src/domain/runs/state-machine.js'

const doc = parse(readFileSync(new URL('../../openapi/agent-operations.yaml', import.meta.url), 'utf8'))

describe('the run state machine', () => {
  it('is the table the OpenAPI document publishes', () => {
    const published = doc['x-run-state-machine']
    expect(published.statuses).toEqual([...RUN_STATUSES])
    expect(published.terminal).toEqual([...TERMINAL])
    expect(published.transitions).toEqual(
      TRANSITIONS.map((t) => ({ from: [...t.from], action: t.action, to: t.to })),
    )
    expect(doc.components.schemas.RunStatus.enum).toEqual([...RUN_STATUSES])
  })

  it('allows nothing on a terminal run and names what is allowed otherwise', () => {
    for (const s of TERMINAL) expect(allowedActions(s)).toEqual([])
    expect(allowedActions('paused')).toEqual(['fail', 'resume', 'cancel'])
    try {
      transition('queued', 'resume')
      expect.unreachable()
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError)
      expect((err as ApiError).code).toBe('invalid_state')
      expect((err as ApiError).detail).toMatchObject({ status: 'queued', action: 'resume' })
    }
  })

  it('resumes to the status the run was paused from', () => {
    expect(transition('paused', 'resume', 'awaiting_approval')).toBe('awaiting_approval')
    expect(transition('paused', 'resume', 'running')).toBe('running')
    expect(transition('awaiting_approval', 'cancel')).toBe('cancelled')
  })
})
