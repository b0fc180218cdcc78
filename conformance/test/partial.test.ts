/**
 * A check that could not fully run never reads as a pass. Through a deployment that serves neither the agent list,
 * nor a connector's records, nor the approval endpoint (the reference behind a proxy answering those 404), the
 * checks that used to pass silently there are `partial` with their reason, in every report, and the verdict is
 * INCOMPLETE naming the setting that completes them; declared absent (`notServed`), they pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { extensionOperations } from '../mutants/dialects.js'
import { type Mutant, pathOnly } from '../mutants/proxy.js'
import { resolveConfig } from '../src/config.js'
import { toJson } from '../src/report/json.js'
import { toJunit } from '../src/report/junit.js'
import { toMarkdown } from '../src/report/markdown.js'
import { formatResult, formatSummary } from '../src/report/text.js'
import type { RunSummary } from '../src/types.js'
import { type ProxiedReference, startProxiedReference } from './proxied-reference.js'

/** The four partial passes the issue found, and the part each could not run. */
const PARTIAL = {
  'scoping.cross-workspace-controls-404': /owner's own approval answered 404/,
  'scoping.lists-stay-in-workspace': /agent-list part .* GET \/v1\/agents answered 404/,
  'ingest.invalid-records-rejected': /"accepted counts what was stored" part did not run/,
  'ingest.idempotent-replay': /"stores nothing twice" part .* did not run/,
} as const
const UNSERVED = [
  'GET /v1/agents',
  'GET /v1/grid/connectors/{connector_id}/records',
  'POST /v1/runs/{run_id}/steps/{step_id}/approval',
]

let t: ProxiedReference

beforeAll(async () => {
  t = await startProxiedReference()
  const operations = extensionOperations(resolveConfig([]).config.openapiPath).filter((op) =>
    UNSERVED.includes(op.name),
  )
  expect(operations).toHaveLength(UNSERVED.length)
  const unserved: Mutant = {
    id: 'no-list-records-approval',
    description: "the agent list, a connector's records and the approval endpoint answer 404",
    targets: [],
    request(req) {
      if (!operations.some((op) => op.method === req.method && op.pattern.test(pathOnly(req.path))))
        return req
      return {
        status: 404,
        headers: { 'content-type': 'application/json' },
        body: '{"error":{"code":"not_found","message":"No such route","detail":{},"request_id":"req_1"}}',
      }
    },
  }
  t.proxy.mutant = unserved
}, 60_000)

afterAll(() => t?.stop())

function run(notServed: string[]): Promise<RunSummary> {
  const c = t.config(['--seed', '7'])
  c.notServed = notServed
  return t.run(c, Object.keys(PARTIAL))
}

describe('a check a part of which could not run', () => {
  it('is partial with its reason in every report, and the verdict is INCOMPLETE naming the setting', async () => {
    const summary = await run([])
    for (const [id, reason] of Object.entries(PARTIAL)) {
      const r = summary.results.find((x) => x.id === id)
      expect(r?.outcome, `${id}: ${r?.message}`).toBe('partial')
      expect(r?.message).toMatch(reason)
    }
    const v = summary.verdict!
    expect(v).toMatchObject({ verdict: 'INCOMPLETE', exitCode: 3 })
    expect(v.core.partial.sort()).toEqual(Object.keys(PARTIAL).sort())
    expect(v.needs).toContain('notServed in --config')
    expect(v.line).toMatch(
      /^INCOMPLETE: .* did not fully run: 4 only partly ran \(.*\) \(they need .*notServed in --config/,
    )

    const json = JSON.parse(toJson(summary)) as {
      counts: { core: { partial: number; pass: number } }
      results: Array<{ id: string; outcome: string; message: string }>
    }
    expect(json.counts.core).toMatchObject({ partial: 4, pass: 0 })
    for (const id of Object.keys(PARTIAL))
      expect(json.results.find((r) => r.id === id)).toMatchObject({ outcome: 'partial' })

    const xml = toJunit(summary)
    for (const id of Object.keys(PARTIAL))
      expect(xml).toMatch(
        new RegExp(
          `name="${id.replace(/\./g, '\\.')}: [^"]*"[^>]*>.*<property name="outcome" value="partial"/>.*<skipped message="partial: `,
        ),
      )

    const md = toMarkdown(summary)
    expect(md).toMatch(/\| core \| 0 \| 0 \| 0 \| 4 \|/)
    for (const id of Object.keys(PARTIAL))
      expect(md).toMatch(new RegExp(`\\| ◐ \\| \`${id.replace(/\./g, '\\.')}\``))

    const lines = summary.results.map((r, i) => formatResult(r, i, summary.results.length))
    for (const line of lines) expect(line).toMatch(/ PART core .*\n {6}not run: .*did not run/)
    expect(formatSummary(summary, false)).toMatch(/core: {4}0 passed, 0 failed, 0 skipped, 4 partial/)
  }, 120_000)

  it('declared absent (notServed in --config), the same checks pass without those parts', async () => {
    const summary = await run(UNSERVED)
    for (const id of Object.keys(PARTIAL))
      expect(summary.results.find((r) => r.id === id)?.outcome, id).toBe('pass')
    expect(summary.verdict?.verdict).toBe('CONFORMANT')
  }, 120_000)
})
