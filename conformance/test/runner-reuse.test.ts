/**
 * A process that runs the suite again and again (the mutation runner's workers run it a thousand times each) pays
 * the same per run. On Node 20 each AsyncLocalStorage ever entered stays in a list that every new promise and
 * async resource of the process walks: one made per run made every run slower than the one before (a worker's
 * suite took twice the CPU after 150 runs). The runner keeps one for the process.
 */
import { afterAll, describe, expect, it, vi } from 'vitest'

const made = vi.hoisted(() => ({ count: 0 }))

vi.mock('node:async_hooks', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:async_hooks')>()
  class CountedStorage<T> extends real.AsyncLocalStorage<T> {
    constructor() {
      super()
      made.count++
    }
  }
  return { ...real, AsyncLocalStorage: CountedStorage }
})

// Test files share their worker's modules (vitest.config.ts): the suite's modules are loaded afresh here, under the
// mock, and forgotten again after this file.
vi.resetModules()
afterAll(() => {
  vi.doUnmock('node:async_hooks')
  vi.resetModules()
})

const { resolveConfig } = await import('../src/config.js')
const { Contract } = await import('../src/contract.js')
const { runChecks } = await import('../src/runner.js')
const contract = Contract.fromFile(resolveConfig([]).config.openapiPath)

describe('running the suite many times in one process', () => {
  it('makes no AsyncLocalStorage per run, and every run runs its checks', async () => {
    // The runner's own storage, made as it loaded: the count sees what the suite's modules make.
    expect(made.count).toBeGreaterThan(0)
    const before = made.count
    for (let i = 0; i < 3; i++) {
      const ran: string[] = []
      const config = resolveConfig(['--seed', String(i)]).config
      const summary = await runChecks({
        config,
        contract,
        cleanup: false,
        checks: ['probe.first', 'probe.second'].map((id) => ({
          id,
          title: id,
          level: 'core' as const,
          clauses: [],
          async run(ctx) {
            await new Promise((r) => setTimeout(r, 1))
            ran.push(ctx.name(id))
          },
        })),
      })
      expect(summary.results.map((r) => [r.id, r.outcome])).toEqual([
        ['probe.first', 'pass'],
        ['probe.second', 'pass'],
      ])
      expect(ran).toHaveLength(2)
    }
    expect(made.count - before).toBe(0)
  })
})
