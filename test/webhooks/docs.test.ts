/** The verification snippets of docs/webhooks.md, run as written against deliveries the server signs. */
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { signDelivery } from '../../src/domain/webhooks/signing.js'
import { testTempDir } from '../support/temp.js'

function hasPython(): boolean {
  try {
    execFileSync('python3', ['--version'])
    return true
  } catch {
    return false
  }
}

const DOC = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8')
const dir = testTempDir('webhook-docs-')

function snippet(language: string, firstLine: string): string {
  const blocks = [...DOC.matchAll(/```(\w+)\n([\s\S]*?)```/g)]
  const found = blocks.find((m) => m[1] === language && m[2]?.startsWith(firstLine))
  if (!found?.[2]) throw new Error(`docs/webhooks.md has no ${language} block starting ${firstLine}`)
  return found[2]
}

const NOW = Date.UTC(2026, 10, 23, 10, 0, 0)
const SECRETS = ['new-secret-éü-1', 'old-secret-2']
// Numbers from RFC 8785 Appendix B, unicode keys that sort differently by code point and by UTF-16 unit.
const BODY = {
  id: 'evt_1',
  event: 'run.awaiting_approval',
  ts: '2026-11-23T10:00:00.000Z',
  run_id: 'run_1',
  agent_id: 'agt_1',
  step_id: 'step_1',
  queue: 'human-review',
  reason: 'needs "approval"\n',
  payload_preview: {
    tool: 'wire',
    truncated: false,
    input: {
      numbers: [
        1e30, 0.000001, 9.999999999999997e-7, 333333333.3333333, 5e-324, -0, 1e21, 9007199254740992, 0.1,
        -1.5,
      ],
      '\ufb33': 'dalet',
      '\u{1F600}': 'grin',
      é: ['\u0001', '€'],
    },
  },
}

function signedBody(): string {
  return signDelivery('dlv_1', BODY, SECRETS, NOW).rawBody
}

/** Re-serialised with other key order and whitespace, as a proxy or framework might. */
function reshuffled(raw: string): string {
  const reverse = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(reverse)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .reverse()
              .map(([k, x]) => [k, reverse(x)]),
          )
        : v
  return JSON.stringify(reverse(JSON.parse(raw)), null, 1)
}

describe('docs/webhooks.md verification snippets', () => {
  afterEach(() => {
    vi.unstubAllEnvs()
  })

  it('the node:crypto snippet verifies real deliveries and rejects tampered or stale ones', async () => {
    const file = join(dir, 'verify-delivery.mjs')
    writeFileSync(file, snippet('js', '// verify-delivery.mjs'))
    const { verifyDelivery } = (await import(pathToFileURL(file).href)) as {
      verifyDelivery(raw: string, secrets: string[], o?: { now?: number }): boolean
    }
    const raw = signedBody()
    expect(verifyDelivery(raw, ['old-secret-2'], { now: NOW })).toBe(true)
    expect(verifyDelivery(reshuffled(raw), ['new-secret-éü-1'], { now: NOW })).toBe(true)
    expect(verifyDelivery(raw.replace('human-review', 'other-queue'), SECRETS, { now: NOW })).toBe(false)
    expect(verifyDelivery(raw, ['wrong-secret'], { now: NOW })).toBe(false)
    expect(verifyDelivery(raw, SECRETS, { now: NOW + 301_000 })).toBe(false)
  })

  it('the in-memory dedupe snippet handles an event once, again after a failure, and refuses a forgery', async () => {
    const file = join(dir, 'dedupe-in-memory.ts')
    const client = pathToFileURL(join(import.meta.dirname, '../../client/src/index.ts')).href
    writeFileSync(
      file,
      snippet('ts', '// dedupe-in-memory.ts').replace("'agentops-contract-kit/client'", `'${client}'`),
    )
    const { onDelivery } = (await import(pathToFileURL(file).href)) as {
      onDelivery(
        raw: string,
        headers: Headers,
        handle: (event: { id: string }) => Promise<void>,
      ): Promise<number>
    }
    // The snippet reads its secret from the environment; restored after the test (files share a worker).
    vi.stubEnv('WEBHOOK_SECRET', SECRETS[0])
    const delivery = signDelivery('dlv_1', BODY, SECRETS, Date.now())
    const headers = new Headers(delivery.headers)
    const handled: string[] = []
    const handle = async (event: { id: string }) => {
      handled.push(event.id)
    }
    const failing = async () => {
      throw new Error('the handler failed')
    }
    const other = signDelivery('dlv_2', { ...BODY, id: 'evt_2' }, SECRETS, Date.now())
    await expect(onDelivery(other.rawBody, new Headers(other.headers), failing)).rejects.toThrow('failed')
    // A retry of the failed one is handled; repeats of a handled one are not.
    expect(await onDelivery(other.rawBody, new Headers(other.headers), handle)).toBe(204)
    for (let i = 0; i < 3; i++) expect(await onDelivery(delivery.rawBody, headers, handle)).toBe(204)
    expect(handled).toEqual(['evt_2', 'evt_1'])
    expect(await onDelivery(delivery.rawBody.replace('human-review', 'other'), headers, handle)).toBe(400)
  })

  it.skipIf(!hasPython())(
    'the Python snippet verifies real deliveries and rejects tampered or stale ones',
    () => {
      const file = join(dir, 'verify_delivery.py')
      writeFileSync(
        file,
        `${snippet('python', '# verify_delivery.py')}
import sys
raw = sys.stdin.read()
print(verify_delivery(raw, sys.argv[2:], now=float(sys.argv[1])))
`,
      )
      const run = (raw: string, now: number, secrets: string[]) =>
        execFileSync('python3', [file, String(now / 1000), ...secrets], {
          input: raw,
          encoding: 'utf8',
        }).trim()
      const raw = signedBody()
      expect(run(raw, NOW, ['old-secret-2'])).toBe('True')
      expect(run(reshuffled(raw), NOW, ['new-secret-éü-1'])).toBe('True')
      expect(run(raw.replace('human-review', 'other-queue'), NOW, SECRETS)).toBe('False')
      expect(run(raw, NOW, ['wrong-secret'])).toBe('False')
      expect(run(raw, NOW + 301_000, SECRETS)).toBe('False')
    },
  )
})
