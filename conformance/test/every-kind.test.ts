/**
 * The kinds `causeEveryKind` surely causes, by the agent that causes each: the table names only the contract's kinds,
 * and every kind of an agent's runs and tasks is in it (a kind left out would be compared with whatever of it arrived
 * first, as before the table, and judged differently from run to run).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { KIND_CAUSED_BY } from '../src/checks/every-kind.js'

const contract: { components: { schemas: { EventKind: { enum: string[] } } } } = parse(
  readFileSync(join(import.meta.dirname, '..', '..', 'openapi', 'agent-operations.yaml'), 'utf8'),
)
const kinds = contract.components.schemas.EventKind.enum

describe('KIND_CAUSED_BY', () => {
  it("names only the contract's event kinds", () => {
    expect(Object.keys(KIND_CAUSED_BY).filter((k) => !kinds.includes(k))).toEqual([])
  })

  it("has every kind of an agent's runs, tasks and policy decisions, and of the agents themselves", () => {
    const ofAgents = kinds.filter((k) => /^(run|task|policy|agent)\./.test(k))
    expect(ofAgents.filter((k) => !(k in KIND_CAUSED_BY))).toEqual([])
  })

  it('names at least one agent for each kind', () => {
    for (const [kind, by] of Object.entries(KIND_CAUSED_BY)) expect(by.length, kind).toBeGreaterThan(0)
  })
})
