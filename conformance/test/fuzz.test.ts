import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../src/config.js'
import { Contract } from '../src/contract.js'
import { sampleBadBodies } from '../src/fuzz.js'

const contract = Contract.fromFile(join(REPO_ROOT, 'openapi', 'agent-operations.yaml'))

describe('generated bad bodies', () => {
  for (const operationId of [
    'createAgent',
    'assignTask',
    'startRun',
    'registerTool',
    'createWebhook',
    'ingestBatch',
  ]) {
    it(`${operationId}: every body breaks the request schema, reproducibly from the seed`, () => {
      const op = contract.byId(operationId)
      expect(op?.requestSchemaPointer).toBeDefined()
      const pointer = op!.requestSchemaPointer!
      const base = { name: 'x', behavior: 'autonomous', description: 'd', records: [] }
      const a = sampleBadBodies(contract, pointer, base, 10, 7)
      const b = sampleBadBodies(contract, pointer, base, 10, 7)
      expect(a.length).toBeGreaterThan(3)
      expect(a.length).toBeLessThanOrEqual(10)
      expect(b).toEqual(a)
      for (const bad of a) expect(contract.errors(pointer, bad.body), bad.defect).not.toEqual([])
    })
  }

  it('covers several kinds of defect', () => {
    const pointer = contract.byId('assignTask')!.requestSchemaPointer!
    const defects = sampleBadBodies(contract, pointer, { description: 'd', priority: 3 }, 30, 1).map(
      (b) => b.defect,
    )
    expect(defects.some((d) => d.startsWith('missing required'))).toBe(true)
    expect(defects.some((d) => d.includes('wrong type'))).toBe(true)
    expect(defects.some((d) => /maximum|minimum|longer|fraction/.test(d))).toBe(true)
  })
})

describe('response validation', () => {
  it('accepts a valid error envelope and names what breaks the document', () => {
    const envelope = { error: { code: 'not_found', message: 'm', detail: {}, request_id: 'req_1' } }
    expect(contract.checkResponse('GET', '/v1/agents/agt_1', 404, envelope)).toBeUndefined()
    expect(contract.checkResponse('GET', '/v1/agents/agt_1', 404, { error: { code: 'not_found' } })).toMatch(
      /message/,
    )
    expect(contract.checkResponse('GET', '/v1/agents/agt_1', 418, envelope)).toMatch(/does not list/)
    expect(contract.checkResponse('GET', '/v1/nowhere', 200, {})).toMatch(/not in the document/)
  })
})
