import { describe, expect, it } from 'vitest'
import { AGENT_WRITES_ONLY_OPERATIONS } from '../../src/domain/agents/service.js'
import { postPathsOf } from '../../src/surface/operations.js'

describe('postPathsOf', () => {
  it('finds the POST path of each operation the domain declares writes-only', () => {
    // createAgent: its quota's count goes with the commit (src/domain/agents/service.ts).
    expect([...postPathsOf(AGENT_WRITES_ONLY_OPERATIONS)]).toEqual(['/v1/agents'])
  })

  it('refuses an unknown operation, a GET and a path with parameters instead of never matching them', () => {
    expect(() => postPathsOf(['noSuchOperation'])).toThrow(/noSuchOperation/)
    expect(() => postPathsOf(['listAgents'])).toThrow(/listAgents/)
    expect(() => postPathsOf(['assignTask'])).toThrow(/assignTask/)
  })
})
