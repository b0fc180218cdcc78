/**
 * The outbox's pool (AGENTOPS_WEBHOOK_CONCURRENCY): 64 attempts in flight per server and channel unless set, the
 * size the destinations benchmark was tuned at (a pass claims as many rows as the pool has free slots).
 */
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'

describe('the outbox pool setting', () => {
  it('is 64 attempts in flight when unset', () => {
    expect(loadConfig({}).webhookConcurrency).toBe(64)
  })

  it('is read from AGENTOPS_WEBHOOK_CONCURRENCY, and a value it cannot use stops the start with its name', () => {
    expect(loadConfig({ AGENTOPS_WEBHOOK_CONCURRENCY: '8' }).webhookConcurrency).toBe(8)
    expect(() => loadConfig({ AGENTOPS_WEBHOOK_CONCURRENCY: 'many' })).toThrow('AGENTOPS_WEBHOOK_CONCURRENCY')
  })
})
